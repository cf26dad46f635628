package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
)

// CursorsByGroups returns every cursor of the given groups.
func (s *Cursors) CursorsByGroups(ctx context.Context, groupIDs []int64) ([]models.Cursor, error) {
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
	// PrevOwner is the dispatcher that held the cursor before: its owner when the
	// claim took it over (a lapsed lease), or the dispatcher that released it last
	// (CursorsRelease); "" for a cursor never owned.
	PrevOwner   string
	PrevVersion int64
	// Released reports that PrevOwner released the cursor (a rebalance) rather than
	// losing it to this claim.
	Released bool
	// HoldLeft is how long the cursor stays held by a release made while a POST was
	// in flight (CursorsReleaseHeld); 0 otherwise.
	HoldLeft time.Duration
}

// CursorClaim makes owner the owner of cursor id and bumps its version, in one UPDATE
// that succeeds only if the cursor is unowned, already owner's, or its owner's lease
// has expired (database time), and only if the row still has the version read just
// before (so PrevOwner and PrevVersion are exact). It returns the cursor as claimed,
// or ok=false (leased elsewhere, or changed meanwhile: retry at the next rebalance).
func (s *Cursors) CursorClaim(ctx context.Context, id int64, owner string) (c CursorClaimed, ok bool, err error) {
	var before struct {
		Owner, ReleasedBy string
		Version           int64
	}
	err = s.sql.QueryRowContext(ctx, "SELECT owner, released_by, version FROM cursors WHERE id = ?", id).Scan(&before.Owner, &before.ReleasedBy, &before.Version)
	if err != nil {
		return c, false, notFound(err, fmt.Sprintf("cursor %d", id))
	}
	res, err := s.sql.ExecContext(ctx, `UPDATE cursors SET owner = ?, released_by = '', version = version + 1, updated_at = NOW(3)
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
	prev, released := before.Owner, false
	if prev == "" && before.ReleasedBy != "" {
		prev, released = before.ReleasedBy, true
	}
	return CursorClaimed{Cursor: toCursor(r), PrevOwner: prev, PrevVersion: before.Version, Released: released, HoldLeft: hold}, true, nil
}

// CursorCommit is one fenced cursor update: Offset and Holes are written only if the
// row still has Version and Owner.
type CursorCommit struct {
	ID      int64
	Version int64
	Offset  int64
	Holes   []models.Hole
}

// cursorCommitChunk caps the cursors one commit statement writes (4 parameters each).
const cursorCommitChunk = 500

// CursorsCommit writes every commit and returns the ids whose version or owner no
// longer matched (the caller lost them: a reset or a rebalance). Each chunk of up
// to 500 cursors is one multi-row UPDATE (a join with the new values, fenced by
// version and owner), so a commit tick costs one statement, not one per cursor; a
// chunk that matched fewer rows than it named reads the fences back to tell which
// were lost. Every row written is also written whole: a failed chunk changes none
// of its cursors.
func (s *Cursors) CursorsCommit(ctx context.Context, owner string, commits []CursorCommit) (lost []int64, err error) {
	for start := 0; start < len(commits); start += cursorCommitChunk {
		chunk := commits[start:min(start+cursorCommitChunk, len(commits))]
		l, err := s.cursorsCommitChunk(ctx, owner, chunk)
		if err != nil {
			return lost, err
		}
		lost = append(lost, l...)
	}
	return lost, nil
}

func (s *Cursors) cursorsCommitChunk(ctx context.Context, owner string, commits []CursorCommit) (lost []int64, err error) {
	var sb strings.Builder
	sb.WriteString("UPDATE cursors c JOIN (")
	args := make([]any, 0, 4*len(commits)+1)
	ids := make([]int64, len(commits))
	for i, c := range commits {
		if i == 0 {
			sb.WriteString("SELECT ? AS id, ? AS ver, ? AS off, ? AS holes")
		} else {
			sb.WriteString(" UNION ALL SELECT ?, ?, ?, ?")
		}
		holes, _ := json.Marshal(nonNilHoles(c.Holes))
		args = append(args, c.ID, c.Version, c.Offset, string(holes))
		ids[i] = c.ID
	}
	sb.WriteString(") v ON c.id = v.id AND c.version = v.ver SET c.committed_offset = v.off, c.holes = v.holes, c.updated_at = NOW(3) WHERE c.owner = ?")
	args = append(args, owner)
	res, err := s.sql.ExecContext(ctx, sb.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("commit %d cursors: %w", len(commits), err)
	}
	if n, _ := res.RowsAffected(); n == int64(len(commits)) {
		return nil, nil
	}
	// Fewer rows changed: some fences failed (or a row was already identical within
	// the same millisecond). Read the fences back to tell which.
	cur, err := s.cursorFences(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read cursor fences after commit: %w", err)
	}
	for _, c := range commits {
		if f, ok := cur[c.ID]; !ok || f.Version != c.Version || f.Owner != owner {
			lost = append(lost, c.ID)
		}
	}
	return lost, nil
}

// cursorFences returns the version and owner of the given cursors (absent: deleted).
func (s *Cursors) cursorFences(ctx context.Context, ids []int64) (map[int64]cursorRow, error) {
	var rows []cursorRow
	if err := s.db.WithContext(ctx).Select("id", "version", "owner").Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[int64]cursorRow, len(rows))
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}

func nonNilHoles(h []models.Hole) []models.Hole {
	if h == nil {
		return []models.Hole{}
	}
	return h
}

// CursorsRelease clears owner from the given cursors it still owns, so the next
// owner can claim them without waiting for the lease to expire, and records owner
// as released_by: the next claim names it as PrevOwner, whose report stream holds
// what owner's POSTs delivered after its last commit.
func (s *Cursors) CursorsRelease(ctx context.Context, owner string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	return s.db.WithContext(ctx).Model(&cursorRow{}).Where("id IN ? AND owner = ?", ids, owner).
		Updates(map[string]any{"owner": "", "released_by": owner, "updated_at": time.Now().UTC()}).Error
}

// DispatcherHeartbeat is DispatcherRenew without its stepped report.
func (s *Cursors) DispatcherHeartbeat(ctx context.Context, id, hostname string, lease time.Duration) error {
	_, err := s.DispatcherRenew(ctx, id, hostname, lease)
	return err
}

// DispatcherRenew renews dispatcher id's lease: lease_until = NOW(3) + lease,
// renewed_at = NOW(3), in one UPDATE. When that finds no row renewed at or before
// NOW(3) — the first heartbeat, or the database clock stepped back since the last
// one — it first re-bases every lease and retry due time set before the step
// (ClockRebase) and then upserts the row; stepped reports that something was
// re-based. A step shorter than the heartbeat interval goes unseen, and costs at
// most that much delay.
func (s *Cursors) DispatcherRenew(ctx context.Context, id, hostname string, lease time.Duration) (stepped bool, err error) {
	res, err := s.sql.ExecContext(ctx, "UPDATE dispatchers SET lease_until = NOW(3) + INTERVAL ? MICROSECOND, renewed_at = NOW(3) WHERE id = ? AND renewed_at <= NOW(3)",
		lease.Microseconds(), id)
	if err != nil {
		return false, fmt.Errorf("heartbeat dispatcher %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return false, nil
	}
	rebased, err := s.ClockRebase(ctx)
	if err != nil {
		return false, err
	}
	_, err = s.sql.ExecContext(ctx, `INSERT INTO dispatchers (id, hostname, started_at, lease_until, renewed_at)
		VALUES (?, ?, NOW(3), NOW(3) + INTERVAL ? MICROSECOND, NOW(3))
		ON DUPLICATE KEY UPDATE lease_until = VALUES(lease_until), renewed_at = VALUES(renewed_at)`, id, hostname, lease.Microseconds())
	if err != nil {
		return false, fmt.Errorf("heartbeat dispatcher %s: %w", id, err)
	}
	return rebased > 0, nil
}

// ClockRebase undoes a backward step of the database clock for the deadlines
// Herald keeps in database time: a dispatcher lease renewed, or a retry row's due
// time set, later than NOW(3) gets its deadline moved to NOW(3) plus the length it
// was given (lease_until − renewed_at, due_at − scheduled_at) and its set time to
// NOW(3). So a lease written on the old clock ends at most one lease length after
// the step (a live owner renews it meanwhile) and a retry waits at most its own
// delay (or claim lease) from the step, instead of the step's length. Rows of a
// well-behaved clock are never touched; both statements are an empty index or tiny
// table range then. It returns how many rows it moved.
func (s *Cursors) ClockRebase(ctx context.Context) (int64, error) {
	var total int64
	for _, q := range []string{
		"UPDATE dispatchers SET lease_until = NOW(3) + INTERVAL GREATEST(0, TIMESTAMPDIFF(MICROSECOND, renewed_at, lease_until)) MICROSECOND, renewed_at = NOW(3) WHERE renewed_at > NOW(3)",
		"UPDATE retry_messages SET due_at = NOW(3) + INTERVAL GREATEST(0, TIMESTAMPDIFF(MICROSECOND, scheduled_at, due_at)) MICROSECOND, scheduled_at = NOW(3) WHERE scheduled_at > NOW(3)",
	} {
		res, err := s.sql.ExecContext(ctx, q)
		if err != nil {
			return total, fmt.Errorf("re-base deadlines after a clock step: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}

// DispatchersLive lists dispatchers whose lease has not expired, in database time.
func (s *Cursors) DispatchersLive(ctx context.Context) ([]string, error) {
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
func (s *Cursors) DispatcherLeases(ctx context.Context) ([]DispatcherLease, error) {
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
func (s *Cursors) DispatcherDelete(ctx context.Context, id string) error {
	_, err := s.sql.ExecContext(ctx, "DELETE FROM dispatchers WHERE id = ? OR lease_until < NOW(3) - INTERVAL 1 DAY", id)
	return err
}
