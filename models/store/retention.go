package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldhq/herald/models"
)

// QueueRetention is one queue's retention state at a moment: Cutoff is the highest
// offset whose message and all below it are older than the topic's retention;
// Floor is the highest offset every subscribed group has consumed (the lowest
// committed offset, below any open hole; Cutoff when no group subscribes).
// HeldBack counts the stored messages in (Floor, Cutoff] a lagging group still
// needs, and HeldBackBy names those groups by id → their own floor.
type QueueRetention struct {
	QueueID    int64
	TopicID    int64
	Policy     models.RetentionPolicy
	Cutoff     int64
	Floor      int64
	HeldBack   int64
	HeldBackBy map[int64]int64
}

// QueueRetentionGet computes q's retention state at now from its topic's
// retention, its cursors and its table (two index reads and one bounded count).
func (s *Store) QueueRetentionGet(ctx context.Context, queueID int64, now time.Time) (QueueRetention, error) {
	var t struct {
		TopicID         int64
		RetentionHours  int
		RetentionPolicy string
	}
	err := s.db.WithContext(ctx).Raw("SELECT t.id AS topic_id, t.retention_hours, t.retention_policy FROM queues q JOIN topics t ON t.id = q.topic_id WHERE q.id = ?", queueID).Scan(&t).Error
	if err != nil {
		return QueueRetention{}, fmt.Errorf("read retention of queue %d: %w", queueID, err)
	}
	if t.TopicID == 0 {
		return QueueRetention{}, fmt.Errorf("queue %d: %w", queueID, models.ErrNotFound)
	}
	r := QueueRetention{QueueID: queueID, TopicID: t.TopicID, Policy: models.RetentionPolicy(t.RetentionPolicy), HeldBackBy: map[int64]int64{}}
	table := models.QueueTableName(queueID)
	cutoffMS := now.Add(-time.Duration(t.RetentionHours) * time.Hour).UnixMilli()
	// Ids grow with insert time, not strictly with created_at: the cutoff is the id
	// below the first young message, so nothing younger is ever below it.
	qc, err := s.Nodes().queueConn(ctx, queueID)
	if err != nil {
		return QueueRetention{}, fmt.Errorf("read retention of queue %d: %w", queueID, err)
	}
	err = qc.QueryRowContext(ctx, "SELECT COALESCE((SELECT MIN(id) - 1 FROM "+table+" WHERE created_at >= ?), (SELECT COALESCE(MAX(id), 0) FROM "+table+"))", cutoffMS).Scan(&r.Cutoff)
	if isNoTable(err) {
		// A move's old queue retired (its table dropped) after the caller read the
		// topic: it holds nothing back any more.
		if live, lerr := s.queuesNotRetired(ctx, []int64{queueID}); lerr == nil && len(live) == 0 {
			return r, nil
		}
	}
	if err != nil {
		return r, fmt.Errorf("read retention cutoff of queue %d: %w", queueID, err)
	}
	floors, err := s.groupFloors(ctx, queueID)
	if err != nil {
		return r, err
	}
	r.Floor = r.Cutoff
	for g, f := range floors {
		r.Floor = min(r.Floor, f)
		if f < r.Cutoff {
			r.HeldBackBy[g] = f
		}
	}
	if r.Floor < r.Cutoff {
		err := qc.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE id > ? AND id <= ?", r.Floor, r.Cutoff).Scan(&r.HeldBack)
		if err != nil {
			return r, fmt.Errorf("count held-back messages of queue %d: %w", queueID, err)
		}
	}
	return r, nil
}

// groupFloors maps each group with a cursor on queue to the highest offset it has
// consumed whole: its committed offset, or one below its lowest open hole.
func (s *Store) groupFloors(ctx context.Context, queueID int64) (map[int64]int64, error) {
	var rows []cursorRow
	if err := s.db.WithContext(ctx).Where("queue_id = ?", queueID).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read cursors of queue %d: %w", queueID, err)
	}
	out := make(map[int64]int64, len(rows))
	for _, r := range rows {
		f := r.CommittedOffset
		var holes []models.Hole
		_ = json.Unmarshal(r.Holes, &holes)
		for _, h := range holes {
			f = min(f, h.From-1)
		}
		out[r.GroupID] = max(f, 0)
	}
	return out, nil
}

// notReferenced is the condition, on a queue table aliased m, that no retry row and
// no dead letter names the message; its two placeholders are the queue id.
const notReferenced = `NOT EXISTS (SELECT 1 FROM retry_messages r WHERE r.queue_id = ? AND r.msg_offset = m.id)
  AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.queue_id = ? AND d.msg_offset = m.id)`

// QueuePrunedThrough returns the highest offset retention may have deleted from
// queue's table (queues.pruned_through; 0 when nothing was pruned): a message
// missing at or below it was pruned, one missing above it is not visible yet.
func (s *Queues) QueuePrunedThrough(ctx context.Context, queueID int64) (int64, error) {
	var through int64
	if err := s.sql.QueryRowContext(ctx, "SELECT pruned_through FROM queues WHERE id = ?", queueID).Scan(&through); err != nil {
		return 0, fmt.Errorf("read pruned offset of queue %d: %w", queueID, notFound(err, "queue"))
	}
	return through, nil
}

// QueuePrune deletes messages of queue with offsets ≤ through that no retry row or
// dead letter references, in chunks of chunk rows (DELETE … ORDER BY id LIMIT), at
// most maxChunks chunks (0: until done), and returns how many it deleted and whether
// it finished. Callers pass through ≤ the queue's Floor unless the policy is strict.
// Before deleting it raises the queue's pruned_through to the highest id ≤ through,
// so the queue's max offset (QueueMaxIDs) survives a table emptied whole.
func (s *Queues) QueuePrune(ctx context.Context, queueID, through int64, chunk, maxChunks int) (deleted int64, done bool, err error) {
	table := models.QueueTableName(queueID)
	// Read first, then write the number: a subquery in the UPDATE would take shared
	// next-key locks in the queue table, in the way of publishes.
	h, err := s.store().Nodes().queueHandle(ctx, queueID)
	if err != nil {
		return 0, false, fmt.Errorf("prune queue %d: %w", queueID, err)
	}
	var last int64
	if err := h.conn.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM "+table+" WHERE id <= ?", through).Scan(&last); err != nil {
		return 0, false, fmt.Errorf("read pruned offset of queue %d: %w", queueID, err)
	}
	if _, err := s.sql.ExecContext(ctx, "UPDATE queues SET pruned_through = ? WHERE id = ? AND pruned_through < ?", last, queueID, last); err != nil {
		return 0, false, fmt.Errorf("record pruned offset of queue %d: %w", queueID, err)
	}
	// ORDER BY/LIMIT needs the single-table DELETE form, which takes no alias.
	stmt := "DELETE FROM " + table + " WHERE id <= ? AND id NOT IN (SELECT msg_offset FROM retry_messages WHERE queue_id = ?) AND id NOT IN (SELECT msg_offset FROM dead_letters WHERE queue_id = ?) ORDER BY id LIMIT ?"
	args := []any{through, queueID, queueID, chunk}
	if h.id != models.PrimaryNodeID {
		// The references live in the control tables: read them there, list them here.
		refs, err := s.store().referencedOffsets(ctx, queueID, 0, through)
		if err != nil {
			return 0, false, err
		}
		stmt = "DELETE FROM " + table + " WHERE id <= ?" + notInList(refs) + " ORDER BY id LIMIT ?"
		args = []any{through, chunk}
	}
	for i := 0; maxChunks == 0 || i < maxChunks; i++ {
		if err := ctx.Err(); err != nil {
			return deleted, false, err
		}
		res, err := h.conn.ExecContext(ctx, stmt, args...)
		if err != nil {
			return deleted, false, fmt.Errorf("prune queue %d: %w", queueID, err)
		}
		n, _ := res.RowsAffected()
		deleted += n
		if n < int64(chunk) {
			return deleted, true, nil
		}
	}
	return deleted, false, nil
}

// CursorExpired is one cursor strict retention moved: its group, the version it now
// has and how many stored messages it had not consumed that will be dropped.
type CursorExpired struct {
	GroupID int64
	QueueID int64
	Version int64
	Dropped int64
}

// CursorsExpire moves every cursor on queue whose floor is below through to offset
// through (holes at or below it dropped, version + 1, as an offset reset) and adds
// the messages it skips to retention_expired, in one transaction. It returns the
// cursors moved, for the caller to raise fences, notify and count.
func (s *Store) CursorsExpire(ctx context.Context, queueID, through int64) ([]CursorExpired, error) {
	var out []CursorExpired
	table := models.QueueTableName(queueID)
	err := s.WithTx(ctx, func(tx *Store) error {
		var rows []cursorRow
		if err := tx.db.Raw("SELECT * FROM cursors WHERE queue_id = ? ORDER BY id FOR UPDATE", queueID).Scan(&rows).Error; err != nil {
			return fmt.Errorf("read cursors of queue %d: %w", queueID, err)
		}
		for _, r := range rows {
			var holes, kept []models.Hole
			_ = json.Unmarshal(r.Holes, &holes)
			floor := r.CommittedOffset
			for _, h := range holes {
				floor = min(floor, h.From-1)
				if h.From > through {
					kept = append(kept, h)
				} else if h.To > through {
					kept = append(kept, models.Hole{From: through + 1, To: h.To, FirstSeenMS: h.FirstSeenMS})
				}
			}
			if floor >= through {
				continue
			}
			dropped, err := tx.countUnreferenced(ctx, queueID, table, floor, through)
			if err != nil {
				return fmt.Errorf("count expired messages of cursor %d: %w", r.ID, err)
			}
			hj, _ := json.Marshal(nonNilHoles(kept))
			off := max(r.CommittedOffset, through)
			if err := tx.db.Exec("UPDATE cursors SET committed_offset = ?, holes = ?, version = version + 1, updated_at = NOW(3) WHERE id = ?", off, hj, r.ID).Error; err != nil {
				return fmt.Errorf("move cursor %d past expired messages: %w", r.ID, err)
			}
			err = tx.db.Exec(`INSERT INTO retention_expired (group_id, queue_id, expired, updated_at) VALUES (?, ?, ?, NOW(3))
				ON DUPLICATE KEY UPDATE expired = expired + VALUES(expired), updated_at = NOW(3)`, r.GroupID, queueID, dropped).Error
			if err != nil {
				return fmt.Errorf("count expired messages of group %d: %w", r.GroupID, err)
			}
			out = append(out, CursorExpired{GroupID: r.GroupID, QueueID: queueID, Version: r.Version + 1, Dropped: dropped})
		}
		return nil
	})
	return out, err
}

// RetentionExpiredByGroup returns, per group id, how many messages strict retention
// dropped before the group consumed them, over the listed queues (all when none).
func (s *Store) RetentionExpiredByGroup(ctx context.Context, queueIDs []int64) (map[int64]int64, error) {
	q := s.db.WithContext(ctx).Table("retention_expired").Select("group_id, SUM(expired) AS expired").Group("group_id")
	if len(queueIDs) > 0 {
		q = q.Where("queue_id IN ?", queueIDs)
	}
	var rows []struct {
		GroupID int64
		Expired int64
	}
	if err := q.Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read expired counts: %w", err)
	}
	out := make(map[int64]int64, len(rows))
	for _, r := range rows {
		out[r.GroupID] = r.Expired
	}
	return out, nil
}

// QueueIDs returns every queue's id in id order.
func (s *Store) QueueIDs(ctx context.Context) ([]int64, error) {
	var ids []int64
	if err := s.db.WithContext(ctx).Raw("SELECT id FROM queues WHERE state <> 'retired' ORDER BY id").Scan(&ids).Error; err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return ids, nil
}

// GroupNames maps the listed group ids to their names (missing ids are left out).
func (s *Store) GroupNames(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID   int64
		Name string
	}
	if err := s.db.WithContext(ctx).Raw("SELECT id, name FROM consumer_groups WHERE id IN ?", ids).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read group names: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.Name
	}
	return out, nil
}

// countUnreferenced counts the messages of queue with lo < id ≤ hi that no retry
// row and no dead letter names; for a queue off the control database the
// references are read from the control tables and listed.
func (s *Store) countUnreferenced(ctx context.Context, queueID int64, table string, lo, hi int64) (int64, error) {
	h, err := s.Nodes().queueHandle(ctx, queueID)
	if err != nil {
		return 0, err
	}
	var n int64
	if h.id == models.PrimaryNodeID {
		err = h.conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" m WHERE m.id > ? AND m.id <= ? AND "+notReferenced, lo, hi, queueID, queueID).Scan(&n)
		return n, err
	}
	refs, err := s.referencedOffsets(ctx, queueID, lo, hi)
	if err != nil {
		return 0, err
	}
	err = h.conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE id > ? AND id <= ?"+notInList(refs), lo, hi).Scan(&n)
	return n, err
}

// referencedOffsets lists the offsets of queue in (lo, hi] that a retry row or a
// dead letter names (control tables).
func (s *Store) referencedOffsets(ctx context.Context, queueID, lo, hi int64) ([]int64, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT msg_offset FROM retry_messages WHERE queue_id = ? AND msg_offset > ? AND msg_offset <= ? UNION SELECT msg_offset FROM dead_letters WHERE queue_id = ? AND msg_offset > ? AND msg_offset <= ?",
		queueID, lo, hi, queueID, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("read referenced messages of queue %d: %w", queueID, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var o int64
		if err := rows.Scan(&o); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// notInList is " AND id NOT IN (…)" for a non-empty list, else "".
func notInList(ids []int64) string {
	if len(ids) == 0 {
		return ""
	}
	return " AND id NOT IN (" + idList(ids) + ")"
}
