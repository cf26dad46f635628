ALTER TABLE subscriptions DROP COLUMN attribute_filter;
