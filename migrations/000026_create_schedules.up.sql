-- Schedules publish one message to a topic on every tick of a cron expression
-- (QStash schedules, RocketMQ timer messages). The maintenance leader fires a due
-- schedule by moving next_run_ms on with a compare-and-set and parking its message
-- in delayed_messages, due at the tick, in one transaction: one message per tick
-- however many processes try, and none lost across a restart.
CREATE TABLE schedules (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(120) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  topic_id BIGINT UNSIGNED NOT NULL,
  cron_expr VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  timezone VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  tag VARBINARY(255) NOT NULL DEFAULT '',
  msg_key VARBINARY(255) NOT NULL DEFAULT '',
  headers JSON NULL,
  body LONGBLOB NOT NULL,
  content_type VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  paused TINYINT(1) NOT NULL DEFAULT 0,
  next_run_ms BIGINT NOT NULL,
  last_run_ms BIGINT NULL,
  runs BIGINT NOT NULL DEFAULT 0,
  created_by VARCHAR(255) NOT NULL DEFAULT '',
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_schedules_name (name),
  KEY idx_schedules_due (paused, next_run_ms),
  KEY idx_schedules_topic (topic_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
