package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldhq/herald/models"
)

// CursorsByGroups returns every cursor of the given groups.
func (s *Store) CursorsByGroups(ctx context.Context, groupIDs []int64) ([]models.Cursor, error) {
	if len(groupIDs) == 0 {
		return nil, nil
	}
	var rows []cursorRow
	if err := s.db.WithContext(ctx).Where("group_id IN ?", groupIDs).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read cursors: %w", err)
	}
	out := make([]models.Cursor, len(rows))
	for i, r := range rows {
		out[i] = toCursor(r)
	}
	return out, nil
}

func toCursor(r cursorRow) models.Cursor {
	c := models.Cursor{ID: r.ID, GroupID: r.GroupID, QueueID: r.QueueID, Offset: r.CommittedOffset, Version: r.Version, Owner: r.Owner}
	_ = json.Unmarshal(r.Holes, &c.Holes)
	return c
}

// CursorClaimed is a cursor as a claim left it, with the owner and version it had
// before: a new owner replays the previous owner's reports of PrevVersion.
type CursorClaimed struct {
	models.Cursor
	PrevOwner   string
	PrevVersion int64
	// HoldLeft is how long the cursor stays held by a release made while a POST was
	// in flight (CursorsReleaseHeld); 0 otherwise.
	HoldLeft time.Duration
}

// CursorClaim makes owner the owner of cursor id and bumps its version, in one UPDATE
// that succeeds only if the cursor is unowned, already owner's, or its owner's lease
// has expired (database time), and only if the row still has the version read just
// before (so PrevOwner and PrevVersion are exact). It returns the cursor as claimed,
// or ok=false (leased elsewhere, or changed meanwhile: retry at the next rebalance).
func (s *Store) CursorClaim(ctx context.Context, id int64, owner string) (c CursorClaimed, ok bool, err error) {
	var before cursorRow
	if err := s.db.WithContext(ctx).Select("id", "owner", "version").Where("id = ?", id).Take(&before).Error; err != nil {
		return c, false, notFound(err, fmt.Sprintf("cursor %d", id))
	}
	res, err := s.sql.ExecContext(ctx, `UPDATE cursors SET owner = ?, version = version + 1, updated_at = NOW(3)
		WHERE id = ? AND version = ? AND (owner = '' OR owner = ? OR NOT EXISTS (SELECT 1 FROM dispatchers d WHERE d.id = cursors.owner AND d.lease_until > NOW(3)))`,
		owner, id, before.Version, owner)
	if err != nil {
		return c, false, fmt.Errorf("claim cursor %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return c, false, nil
	}
	var r cursorRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&r).Error; err != nil {
		return c, false, notFound(err, fmt.Sprintf("cursor %d", id))
	}
	if r.Owner != owner {
		return c, false, nil
	}
	hold, err := s.cursorHoldLeft(ctx, id)
	if err != nil {
		return c, false, err
	}
	return CursorClaimed{Cursor: toCursor(r), PrevOwner: before.Owner, PrevVersion: before.Version, HoldLeft: hold}, true, nil
}

// CursorCommit is one fenced cursor update: Offset and Holes are written only if the
// row still has Version and Owner.
type CursorCommit struct {
	ID      int64
	Version int64
	Offset  int64
	Holes   []models.Hole
}

// CursorsCommit writes every commit in one transaction and returns the ids whose
// version or owner no longer matched (the caller lost them: a reset or a rebalance).
func (s *Store) CursorsCommit(ctx context.Context, owner string, commits []CursorCommit) (lost []int64, err error) {
	if len(commits) == 0 {
		return nil, nil
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin commit: %w", err)
	}
	defer tx.Rollback()
	for _, c := range commits {
		holes, _ := json.Marshal(nonNilHoles(c.Holes))
		res, err := tx.ExecContext(ctx, "UPDATE cursors SET committed_offset = ?, holes = ?, updated_at = NOW(3) WHERE id = ? AND version = ? AND owner = ?",
			c.Offset, holes, c.ID, c.Version, owner)
		if err != nil {
			return nil, fmt.Errorf("commit cursor %d: %w", c.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Zero rows also when nothing changed; tell the cases apart.
			var v int64
			var o string
			if err := tx.QueryRowContext(ctx, "SELECT version, owner FROM cursors WHERE id = ?", c.ID).Scan(&v, &o); err != nil || v != c.Version || o != owner {
				lost = append(lost, c.ID)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit cursors: %w", err)
	}
	return lost, nil
}

func nonNilHoles(h []models.Hole) []models.Hole {
	if h == nil {
		return []models.Hole{}
	}
	return h
}

// CursorsRelease clears owner from the given cursors it still owns, so the next
// owner can claim them without waiting for the lease to expire.
func (s *Store) CursorsRelease(ctx context.Context, owner string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	return s.db.WithContext(ctx).Model(&cursorRow{}).Where("id IN ? AND owner = ?", ids, owner).
		Updates(map[string]any{"owner": "", "updated_at": time.Now().UTC()}).Error
}

// DispatcherHeartbeat upserts dispatcher id with lease_until = NOW(3) + lease.
func (s *Store) DispatcherHeartbeat(ctx context.Context, id, hostname string, lease time.Duration) error {
	_, err := s.sql.ExecContext(ctx, `INSERT INTO dispatchers (id, hostname, started_at, lease_until)
		VALUES (?, ?, NOW(3), NOW(3) + INTERVAL ? MICROSECOND)
		ON DUPLICATE KEY UPDATE lease_until = VALUES(lease_until)`, id, hostname, lease.Microseconds())
	if err != nil {
		return fmt.Errorf("heartbeat dispatcher %s: %w", id, err)
	}
	return nil
}

// DispatchersLive lists dispatchers whose lease has not expired, in database time.
func (s *Store) DispatchersLive(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.db.WithContext(ctx).Raw("SELECT id FROM dispatchers WHERE lease_until > NOW(3) ORDER BY id").Scan(&ids).Error
	return ids, err
}

// DispatcherLease is a live dispatcher and how long its lease still runs, measured
// in database time when it was read.
type DispatcherLease struct {
	ID   string
	Left time.Duration
}

// DispatcherLeases lists dispatchers whose lease has not expired, ordered by id,
// each with the time its lease has left (database time, so the caller can wait
// that long on its own clock and find the lease over if it was not renewed). One
// statement.
func (s *Store) DispatcherLeases(ctx context.Context) ([]DispatcherLease, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT id, TIMESTAMPDIFF(MICROSECOND, NOW(3), lease_until) FROM dispatchers WHERE lease_until > NOW(3) ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("read dispatcher leases: %w", err)
	}
	defer rows.Close()
	var out []DispatcherLease
	for rows.Next() {
		var l DispatcherLease
		var us int64
		if err := rows.Scan(&l.ID, &us); err != nil {
			return nil, fmt.Errorf("read dispatcher leases: %w", err)
		}
		l.Left = time.Duration(us) * time.Microsecond
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read dispatcher leases: %w", err)
	}
	return out, nil
}

// DispatcherDelete removes dispatcher id (on clean shutdown) and old expired rows.
func (s *Store) DispatcherDelete(ctx context.Context, id string) error {
	_, err := s.sql.ExecContext(ctx, "DELETE FROM dispatchers WHERE id = ? OR lease_until < NOW(3) - INTERVAL 1 DAY", id)
	return err
}

// GroupLag returns a group's lag: offsets between its cursors and their queues' max
// offsets, and the age in seconds of the oldest message past a cursor (0 if none).
func (s *Store) GroupLag(ctx context.Context, groupID int64) (msgs int64, seconds float64, err error) {
	ps, err := s.GroupPositions(ctx, []int64{groupID}, true)
	if err != nil {
		return 0, 0, err
	}
	oldest := int64(0)
	for _, p := range ps {
		msgs += p.Lag
		if p.OldestUndoneMS > 0 && (oldest == 0 || p.OldestUndoneMS < oldest) {
			oldest = p.OldestUndoneMS
		}
	}
	return msgs, LagAge(oldest, time.Now()), nil
}
