-- Batch ids (bat_…) are looked up through GET /api/v1/messages/{id}.
CREATE INDEX idx_attempts_webhook ON delivery_attempts (webhook_id, created_at);
