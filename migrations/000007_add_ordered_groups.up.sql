-- Ordered consumer groups: what a group does when a queue's head message exhausts
-- max_attempts, the queues blocked on a message (retry in place, or paused for an
-- operator), and each topic's key slot table (1,024 slots → queue id) so that
-- growing a topic moves no key.
ALTER TABLE consumer_groups ADD COLUMN ordered_on_exhausted VARCHAR(16) NOT NULL DEFAULT 'dead_letter' AFTER ordered;

-- One row per (group, queue) of an ordered group whose head message failed: written
-- by the cursor's owner with its commits, read by the console and stats; an operator's
-- skip or resume is left in action for the owner to apply.
CREATE TABLE ordered_blocks (
  group_id BIGINT UNSIGNED NOT NULL,
  queue_id BIGINT UNSIGNED NOT NULL,
  msg_offset BIGINT UNSIGNED NOT NULL,
  msg_count INT NOT NULL DEFAULT 1,
  attempts INT NOT NULL DEFAULT 0,
  next_at DATETIME(3) NULL,
  paused TINYINT(1) NOT NULL DEFAULT 0,
  last_error VARCHAR(255) NOT NULL DEFAULT '',
  action VARCHAR(16) NOT NULL DEFAULT '',
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (group_id, queue_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- A cursor of an ordered group released while its owner still had a POST in flight
-- is not sent from before hold_until (that POST's timeout), like RocketMQ's queue
-- lock expiry.
ALTER TABLE cursors ADD COLUMN hold_until DATETIME(3) NULL;

-- A topic's key placement: slot → queue id, 1,024 slots (fnv32a(key) % 1024). NULL
-- until first needed; it is then frozen from the queues the topic had.
ALTER TABLE topics ADD COLUMN key_slots MEDIUMTEXT NULL;
