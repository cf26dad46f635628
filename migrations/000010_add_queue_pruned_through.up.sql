-- The highest offset retention has deleted through, per queue: a queue's max offset
-- is GREATEST(MAX(id), pruned_through), so a table retention emptied still reads its
-- last offset and the cursors at it are not taken for cursors beyond the table.
ALTER TABLE queues
  ADD COLUMN pruned_through BIGINT UNSIGNED NOT NULL DEFAULT 0;

-- Queues emptied before this column existed: the cursors' committed offsets are
-- offsets the queue held (at most its highest id), so they are a safe first value.
UPDATE queues q SET pruned_through = (SELECT COALESCE(MAX(c.committed_offset), 0) FROM cursors c WHERE c.queue_id = q.id);
