-- Attempt search by error class (GET /api/v1/groups/{group}/attempts?error_class=):
-- without it the search walks idx_attempts_group through every attempt of the group,
-- successes included, to find the few of one class. InnoDB appends the primary key
-- (id, created_at), so the index also gives the newest-first order and paging.
CREATE INDEX idx_attempts_group_class ON delivery_attempts (group_id, error_class, created_at);
