-- max_throttles is how many times in a row a message may be throttled (429, or 503
-- with Retry-After) before the throttle counts as its failed attempt; a group that
-- bisects throttled batches adds one per halving.
ALTER TABLE consumer_groups ADD COLUMN max_throttles INT NOT NULL DEFAULT 10;
