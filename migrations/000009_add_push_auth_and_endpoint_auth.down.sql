DROP TABLE push_keys;
ALTER TABLE consumer_groups DROP COLUMN endpoint_auth, DROP COLUMN push_auth_audience, DROP COLUMN push_auth_enabled;
