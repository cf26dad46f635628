DROP INDEX idx_audit_actor ON audit_log;
DROP TABLE stats_minutely;
ALTER TABLE consumer_groups
  DROP COLUMN previous_secret_expires_at,
  DROP COLUMN previous_signing_secret,
  MODIFY signing_secret VARCHAR(255) NOT NULL;
