-- One row per blocked key of a group ordered by key: its head message (msg_offset)
-- and the msg_count messages of the key its failed POST carried were tried attempts
-- times and go again at next_at, or wait for an operator when paused. Written by the
-- cursor's owner with its commits, read by stats, the console and the next owner;
-- an operator's skip or resume is left in action for the owner to apply.
CREATE TABLE ordered_key_blocks (
  group_id BIGINT UNSIGNED NOT NULL,
  queue_id BIGINT UNSIGNED NOT NULL,
  msg_key VARBINARY(255) NOT NULL,
  msg_offset BIGINT UNSIGNED NOT NULL,
  msg_count INT NOT NULL DEFAULT 1,
  attempts INT NOT NULL DEFAULT 0,
  next_at DATETIME(3) NULL,
  paused TINYINT(1) NOT NULL DEFAULT 0,
  last_error VARCHAR(255) NOT NULL DEFAULT '',
  action VARCHAR(16) NOT NULL DEFAULT '',
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (group_id, queue_id, msg_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
