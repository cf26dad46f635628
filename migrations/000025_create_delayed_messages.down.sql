DROP TABLE delayed_messages;
