-- Commit decisions of publish requests that span db nodes (XA): a row written on
-- the control database after every branch prepared means "commit"; a prepared
-- branch whose xid has no row is rolled back by recovery. Rows are deleted once
-- every branch committed.
CREATE TABLE xa_decisions (
  xid VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
