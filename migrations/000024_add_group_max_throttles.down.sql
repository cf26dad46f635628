ALTER TABLE consumer_groups DROP COLUMN max_throttles;
