DROP INDEX idx_retry_queue ON retry_messages;
DROP INDEX idx_dead_letters_queue ON dead_letters;
DROP INDEX idx_dead_letters_created ON dead_letters;
DROP TABLE retention_expired;
DROP TABLE deleted_groups;
ALTER TABLE consumer_groups DROP COLUMN dead_letter_retention_hours;
ALTER TABLE topics DROP COLUMN retention_policy, DROP COLUMN retention_hours;
