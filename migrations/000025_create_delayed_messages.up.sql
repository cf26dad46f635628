-- Delayed messages wait here, parked outside the queue tables (RocketMQ's schedule
-- topic), until deliver_at_ms (Unix ms); the maintenance leader then moves each into
-- its topic's queue in the transaction that deletes it here, so it is stored exactly
-- once and cursors never wait for a message that is not due.
CREATE TABLE delayed_messages (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  topic_id BIGINT UNSIGNED NOT NULL,
  deliver_at_ms BIGINT NOT NULL,
  tag VARBINARY(255) NOT NULL DEFAULT '',
  msg_key VARBINARY(255) NOT NULL DEFAULT '',
  headers JSON NULL,
  body LONGBLOB NOT NULL,
  content_type VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  trace_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  producer_ip VARCHAR(45) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  KEY idx_delayed_due (deliver_at_ms, id),
  KEY idx_delayed_topic (topic_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
