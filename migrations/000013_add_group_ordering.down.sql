ALTER TABLE consumer_groups DROP COLUMN ordering;
