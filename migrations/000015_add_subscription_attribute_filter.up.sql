-- A subscription's attribute filter on the publisher's x-* headers (models.Filter,
-- at most 1,024 bytes; empty: none), parsed and validated when written.
ALTER TABLE subscriptions
  ADD COLUMN attribute_filter VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '';
