-- Leases for work that runs once per deployment (the maintenance role): one row per
-- lease name, held by one process until lease_until (database time, like the
-- dispatchers' leases). A holder renews before it expires and releases on shutdown.
CREATE TABLE maintenance_leases (
  name VARCHAR(64) NOT NULL PRIMARY KEY,
  holder VARCHAR(128) NOT NULL DEFAULT '',
  lease_until DATETIME(3) NOT NULL,
  acquired_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
