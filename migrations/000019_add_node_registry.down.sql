ALTER TABLE queues
  DROP KEY idx_queues_node;
ALTER TABLE db_nodes
  DROP COLUMN updated_at,
  DROP COLUMN state,
  DROP COLUMN weight;
