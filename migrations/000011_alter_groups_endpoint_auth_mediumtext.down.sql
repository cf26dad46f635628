-- Refuses (strict mode) while a group's endpoint_auth exceeds 64 KiB.
ALTER TABLE consumer_groups MODIFY COLUMN endpoint_auth TEXT NULL;
