DROP INDEX idx_attempts_webhook ON delivery_attempts;
