DROP TABLE IF EXISTS group_health;
DROP TABLE IF EXISTS delivery_attempts;
DROP TABLE IF EXISTS dead_letters;
DROP TABLE IF EXISTS retry_messages;
