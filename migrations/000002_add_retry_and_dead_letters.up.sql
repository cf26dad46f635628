-- Retry topic: one row per failed message per group, a reference
-- to the message (never a copy of its body). The owning dispatcher claims due rows
-- by setting claim_token and pushing due_at past the job's deadline.
CREATE TABLE retry_messages (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  group_id BIGINT UNSIGNED NOT NULL,
  queue_id BIGINT UNSIGNED NOT NULL,
  msg_offset BIGINT UNSIGNED NOT NULL,
  attempt INT NOT NULL,
  due_at DATETIME(3) NOT NULL,
  claim_token VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  last_status INT NOT NULL DEFAULT 0,
  last_error VARCHAR(255) NOT NULL DEFAULT '',
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_retry_message (group_id, queue_id, msg_offset),
  KEY idx_retry_due (group_id, due_at),
  KEY idx_retry_claim (claim_token)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Dead letters: written in the transaction that deletes the retry row.
-- dlq_offset is set once the outbox appended the message to `<group>.dlq`.
CREATE TABLE dead_letters (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  group_id BIGINT UNSIGNED NOT NULL,
  queue_id BIGINT UNSIGNED NOT NULL,
  msg_offset BIGINT UNSIGNED NOT NULL,
  attempts INT NOT NULL,
  last_status INT NOT NULL DEFAULT 0,
  last_error VARCHAR(255) NOT NULL DEFAULT '',
  state VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'pending',
  dlq_queue_id BIGINT UNSIGNED NULL,
  dlq_offset BIGINT UNSIGNED NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_dead_letter (group_id, queue_id, msg_offset),
  KEY idx_dead_letters_state (group_id, state, created_at),
  KEY idx_dead_letters_outbox (dlq_offset)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Delivery attempts: a log, written in multi-row INSERTs, partitioned by
-- day so retention drops partitions. The primary key carries created_at because
-- every unique key of a partitioned table must contain the partitioning column.
CREATE TABLE delivery_attempts (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  group_id BIGINT UNSIGNED NOT NULL,
  queue_id BIGINT UNSIGNED NOT NULL,
  msg_offset BIGINT UNSIGNED NOT NULL,
  webhook_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  attempt INT NOT NULL,
  status INT NOT NULL DEFAULT 0,
  error_class VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  latency_ms INT NOT NULL DEFAULT 0,
  response_excerpt BLOB NULL,
  created_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id, created_at),
  KEY idx_attempts_message (queue_id, msg_offset, created_at),
  KEY idx_attempts_group (group_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
PARTITION BY RANGE COLUMNS (created_at) (PARTITION p_max VALUES LESS THAN (MAXVALUE));

-- Group health (failure counters and breaker), written by the owning
-- dispatcher: one row per group.
CREATE TABLE group_health (
  group_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  consecutive_failures INT NOT NULL DEFAULT 0,
  breaker_state VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'closed',
  breaker_open_until DATETIME(3) NULL,
  breaker_cooldown_ms INT NOT NULL DEFAULT 0,
  effective_rate DOUBLE NOT NULL DEFAULT 0,
  last_status INT NOT NULL DEFAULT 0,
  last_error VARCHAR(255) NOT NULL DEFAULT '',
  last_success_at DATETIME(3) NULL,
  failing_since DATETIME(3) NULL,
  throttled_until DATETIME(3) NULL,
  successes_minute INT NOT NULL DEFAULT 0,
  failures_minute INT NOT NULL DEFAULT 0,
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
