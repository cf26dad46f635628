package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// MaintenanceLeaseTake takes or renews the lease called name for holder until
// NOW(3) + lease (database time, never local clocks). It succeeds when the lease is
// free, expired or already holder's, and reports whether holder holds it afterwards;
// a live lease of another holder is left alone (false, nil). Renewing moves
// lease_until and keeps acquired_at. A renewal or a take is one UPDATE; only when it
// changes no row (another holder, a renewal within the same millisecond, or no row
// yet) is the holder read back, and a missing row created.
func (s *Store) MaintenanceLeaseTake(ctx context.Context, name, holder string, lease time.Duration) (bool, error) {
	for created := false; ; created = true {
		res, err := s.sql.ExecContext(ctx, `UPDATE maintenance_leases
			SET acquired_at = IF(holder = ?, acquired_at, NOW(3)), holder = ?, lease_until = NOW(3) + INTERVAL ? MICROSECOND
			WHERE name = ? AND (holder = ? OR lease_until <= NOW(3))`, holder, holder, lease.Microseconds(), name, holder)
		if err != nil {
			return false, fmt.Errorf("take lease %s: %w", name, err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			return true, nil
		}
		cur, until, err := s.MaintenanceLeaseHolder(ctx, name)
		if err != nil {
			return false, err
		}
		if cur != "" || !until.IsZero() || created {
			return cur == holder, nil
		}
		if _, err := s.sql.ExecContext(ctx, "INSERT IGNORE INTO maintenance_leases (name, holder, lease_until) VALUES (?, '', NOW(3))", name); err != nil {
			return false, fmt.Errorf("create lease %s: %w", name, err)
		}
	}
}

// MaintenanceLeaseRelease ends holder's lease called name at once, so a successor
// takes it without waiting for expiry. Releasing a lease holder does not hold is a
// no-op.
func (s *Store) MaintenanceLeaseRelease(ctx context.Context, name, holder string) error {
	if _, err := s.sql.ExecContext(ctx, "UPDATE maintenance_leases SET lease_until = NOW(3) WHERE name = ? AND holder = ?", name, holder); err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}

// MaintenanceLeaseHolder returns who holds the lease called name and until when
// (database time, UTC); an expired or released lease returns holder "". A lease never
// taken returns "" and the zero time.
func (s *Store) MaintenanceLeaseHolder(ctx context.Context, name string) (holder string, until time.Time, err error) {
	err = s.sql.QueryRowContext(ctx, "SELECT IF(lease_until > NOW(3), holder, ''), lease_until FROM maintenance_leases WHERE name = ?", name).Scan(&holder, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read lease %s: %w", name, err)
	}
	return holder, until, nil
}
