DROP TABLE IF EXISTS maintenance_leases;
