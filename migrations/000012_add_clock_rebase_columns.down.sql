ALTER TABLE dispatchers DROP COLUMN renewed_at;
ALTER TABLE retry_messages DROP KEY idx_retry_scheduled, DROP COLUMN scheduled_at;
