ALTER TABLE queues DROP COLUMN pruned_through;
