-- Secret rotation: during the overlap window both secrets sign.
-- signing_secret and previous_signing_secret hold `enc:v1:<key id>:<base64>` when
-- HERALD_ENCRYPTION_KEY is set, or plaintext `whsec_…` written before it was.
ALTER TABLE consumer_groups
  MODIFY signing_secret VARCHAR(512) NOT NULL,
  ADD COLUMN previous_signing_secret VARCHAR(512) NOT NULL DEFAULT '' AFTER signing_secret,
  ADD COLUMN previous_secret_expires_at DATETIME(3) NULL AFTER previous_signing_secret;

-- Per-minute rollups for the console's charts, kept 7 days. group_id 0 holds a
-- topic's published count; topic_id 0 a group's delivered / failed counts when the
-- topic is unknown. lag_messages is a gauge: the largest lag sampled in the minute.
CREATE TABLE stats_minutely (
  minute DATETIME NOT NULL,
  group_id BIGINT UNSIGNED NOT NULL DEFAULT 0,
  topic_id BIGINT UNSIGNED NOT NULL DEFAULT 0,
  published BIGINT UNSIGNED NOT NULL DEFAULT 0,
  delivered BIGINT UNSIGNED NOT NULL DEFAULT 0,
  failed BIGINT UNSIGNED NOT NULL DEFAULT 0,
  lag_messages BIGINT UNSIGNED NOT NULL DEFAULT 0,
  PRIMARY KEY (minute, group_id, topic_id),
  KEY idx_stats_group (group_id, minute)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE INDEX idx_audit_actor ON audit_log (actor, created_at);
