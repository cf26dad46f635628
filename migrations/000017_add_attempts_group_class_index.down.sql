DROP INDEX idx_attempts_group_class ON delivery_attempts;
