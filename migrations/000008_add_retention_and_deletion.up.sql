-- Retention per topic: messages older than retention_hours are deleted once every
-- subscribed group has consumed them ('consumed', the default); 'strict' drops them
-- after retention_hours even when a group lags, moving its cursors past them.
ALTER TABLE topics
  ADD COLUMN retention_hours INT NOT NULL DEFAULT 168,
  ADD COLUMN retention_policy VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'consumed';

-- Dead letters of a group expire after dead_letter_retention_hours (14 days).
ALTER TABLE consumer_groups
  ADD COLUMN dead_letter_retention_hours INT NOT NULL DEFAULT 336;

-- Groups deleted with their dead letters and attempt log kept for a grace period:
-- maintenance removes those rows once purge_after has passed, then this row.
CREATE TABLE deleted_groups (
  group_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  name VARCHAR(120) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  deleted_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  purge_after DATETIME(3) NOT NULL,
  KEY idx_deleted_groups_purge (purge_after)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Messages dropped by strict retention before a group consumed them, per group and
-- queue: the durable side of herald_messages_expired_total.
CREATE TABLE retention_expired (
  group_id BIGINT UNSIGNED NOT NULL,
  queue_id BIGINT UNSIGNED NOT NULL,
  expired BIGINT UNSIGNED NOT NULL DEFAULT 0,
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (group_id, queue_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE INDEX idx_dead_letters_created ON dead_letters (created_at);

-- Retention skips messages a retry row or a dead letter still references: looked up
-- by (queue, offset).
CREATE INDEX idx_dead_letters_queue ON dead_letters (queue_id, msg_offset);
CREATE INDEX idx_retry_queue ON retry_messages (queue_id, msg_offset);
