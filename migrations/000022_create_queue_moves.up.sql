-- Queue moves: one row per queue sealed to move its keys elsewhere (a topic move, a
-- node drain). from_queue_id is sealed (a BEFORE INSERT trigger refuses every row)
-- and its watermark is MAX(id) at seal time (NULL while the seal is under way);
-- slots lists the key slots that went from it to to_queue_id (JSON array). Groups
-- ordered by key or by queue hold the moved keys on to_queue_id until they have
-- finished from_queue_id up to the watermark. retired_at is set when every group
-- drained it and its table was dropped; the row stays for the record.
CREATE TABLE queue_moves (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  topic_id BIGINT UNSIGNED NOT NULL,
  from_queue_id BIGINT UNSIGNED NOT NULL,
  to_queue_id BIGINT UNSIGNED NOT NULL,
  slots MEDIUMTEXT NOT NULL,
  watermark BIGINT NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  sealed_at DATETIME(3) NULL,
  retired_at DATETIME(3) NULL,
  UNIQUE KEY uq_queue_moves_from (from_queue_id),
  KEY idx_queue_moves_topic (topic_id),
  KEY idx_queue_moves_to (to_queue_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
