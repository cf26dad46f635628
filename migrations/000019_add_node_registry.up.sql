-- The db node registry: each data node's placement weight and state. Node 1 is the
-- control database itself (its DSN is HERALD_MYSQL_DSN, so dsn_enc stays NULL);
-- other nodes hold their DSN sealed like signing secrets (internal/secrets).
ALTER TABLE db_nodes
  ADD COLUMN weight INT NOT NULL DEFAULT 100,
  ADD COLUMN state VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'read-write',
  ADD COLUMN updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3);
ALTER TABLE queues
  ADD KEY idx_queues_node (node_id);
