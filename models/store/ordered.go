package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
)

// OrderedBlocksByGroups returns the blocked queues of the given groups, by group then
// queue. onlyActions limits them to those with an operator action waiting.
func (s *Cursors) OrderedBlocksByGroups(ctx context.Context, groupIDs []int64, onlyActions bool) ([]models.OrderedBlock, error) {
	if len(groupIDs) == 0 {
		return nil, nil
	}
	q := "SELECT group_id, queue_id, msg_offset, msg_count, attempts, next_at, paused, last_error, action, updated_at FROM ordered_blocks WHERE group_id IN (?" +
		strings.Repeat(",?", len(groupIDs)-1) + ")"
	if onlyActions {
		q += " AND action <> ''"
	}
	args := make([]any, len(groupIDs))
	for i, id := range groupIDs {
		args[i] = id
	}
	rows, err := s.sql.QueryContext(ctx, q+" ORDER BY group_id, queue_id", args...)
	if err != nil {
		return nil, fmt.Errorf("read ordered blocks: %w", err)
	}
	defer rows.Close()
	var out []models.OrderedBlock
	for rows.Next() {
		var b models.OrderedBlock
		var next sql.NullTime
		if err := rows.Scan(&b.GroupID, &b.QueueID, &b.Offset, &b.Count, &b.Attempts, &next, &b.Paused, &b.LastError, &b.Action, &b.UpdatedAt); err != nil {
			return nil, fmt.Errorf("read ordered blocks: %w", err)
		}
		if next.Valid {
			b.NextAt = next.Time
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// OrderedBlocksSave writes the owner's view of blocked queues in one transaction:
// each of set is inserted or updated (an operator's pending action is kept), each
// (group, queue) of cleared is deleted.
func (s *Cursors) OrderedBlocksSave(ctx context.Context, set []models.OrderedBlock, cleared [][2]int64) error {
	if len(set) == 0 && len(cleared) == 0 {
		return nil
	}
	tx, err := s.store().begin(ctx)
	if err != nil {
		return fmt.Errorf("begin ordered blocks: %w", err)
	}
	defer tx.Rollback()
	for _, b := range set {
		var next any
		if !b.NextAt.IsZero() {
			next = b.NextAt.UTC()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ordered_blocks (group_id, queue_id, msg_offset, msg_count, attempts, next_at, paused, last_error, updated_at)
			VALUES (?,?,?,?,?,?,?,?,NOW(3)) ON DUPLICATE KEY UPDATE msg_offset = VALUES(msg_offset), msg_count = VALUES(msg_count), attempts = VALUES(attempts),
			next_at = VALUES(next_at), paused = VALUES(paused), last_error = VALUES(last_error), updated_at = NOW(3)`,
			b.GroupID, b.QueueID, b.Offset, b.Count, b.Attempts, next, b.Paused, truncate(b.LastError, 255)); err != nil {
			return fmt.Errorf("write ordered block %d/%d: %w", b.GroupID, b.QueueID, err)
		}
	}
	for _, gq := range cleared {
		if _, err := tx.ExecContext(ctx, "DELETE FROM ordered_blocks WHERE group_id = ? AND queue_id = ?", gq[0], gq[1]); err != nil {
			return fmt.Errorf("clear ordered block %d/%d: %w", gq[0], gq[1], err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit ordered blocks: %w", err)
	}
	return nil
}

// OrderedBlockAction leaves an operator's action (models.OrderedActionSkip or
// OrderedActionResume) on the blocked queue (group, queue) for its owner to apply.
// Errors: models.ErrNotFound when that queue is not blocked.
func (s *Cursors) OrderedBlockAction(ctx context.Context, groupID, queueID int64, action string) (models.OrderedBlock, error) {
	res, err := s.sql.ExecContext(ctx, "UPDATE ordered_blocks SET action = ?, updated_at = NOW(3) WHERE group_id = ? AND queue_id = ?", action, groupID, queueID)
	if err != nil {
		return models.OrderedBlock{}, fmt.Errorf("set ordered block action %d/%d: %w", groupID, queueID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return models.OrderedBlock{}, fmt.Errorf("blocked queue %d of group %d: %w", queueID, groupID, models.ErrNotFound)
	}
	bs, err := s.OrderedBlocksByGroups(ctx, []int64{groupID}, false)
	if err != nil {
		return models.OrderedBlock{}, err
	}
	for _, b := range bs {
		if b.QueueID == queueID {
			return b, nil
		}
	}
	return models.OrderedBlock{}, fmt.Errorf("blocked queue %d of group %d: %w", queueID, groupID, models.ErrNotFound)
}

// OrderedBlockActionDone clears action from (group, queue) once its owner applied it.
func (s *Cursors) OrderedBlockActionDone(ctx context.Context, groupID, queueID int64, action string) error {
	_, err := s.sql.ExecContext(ctx, "UPDATE ordered_blocks SET action = '' WHERE group_id = ? AND queue_id = ? AND action = ?", groupID, queueID, action)
	if err != nil {
		return fmt.Errorf("clear ordered block action %d/%d: %w", groupID, queueID, err)
	}
	return nil
}

// CursorsReleaseHeld releases cursors like CursorsRelease, and sets hold_until to
// hold from now (database time): the next owner sends nothing from them before, as
// the previous owner may still have a POST in flight (ordered groups).
func (s *Cursors) CursorsReleaseHeld(ctx context.Context, owner string, ids []int64, hold time.Duration) error {
	if len(ids) == 0 {
		return nil
	}
	q := "UPDATE cursors SET owner = '', released_by = ?, hold_until = NOW(3) + INTERVAL ? MICROSECOND, updated_at = NOW(3) WHERE owner = ? AND id IN (?" + strings.Repeat(",?", len(ids)-1) + ")"
	args := []any{owner, hold.Microseconds(), owner}
	for _, id := range ids {
		args = append(args, id)
	}
	if _, err := s.sql.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("release held cursors: %w", err)
	}
	return nil
}

// cursorHoldLeft returns how long cursor id is still held after a release with a
// POST in flight (0 when not held).
func (s *Cursors) cursorHoldLeft(ctx context.Context, id int64) (time.Duration, error) {
	var us sql.NullInt64
	err := s.sql.QueryRowContext(ctx, "SELECT GREATEST(0, TIMESTAMPDIFF(MICROSECOND, NOW(3), hold_until)) FROM cursors WHERE id = ?", id).Scan(&us)
	if err != nil {
		return 0, fmt.Errorf("read hold of cursor %d: %w", id, err)
	}
	return time.Duration(us.Int64) * time.Microsecond, nil
}

// OrderedKeyBlocksByGroups returns the blocked keys of the given groups ordered by
// key, by group, queue and key. onlyActions limits them to those with an operator
// action waiting; limit > 0 caps the rows returned.
func (s *Cursors) OrderedKeyBlocksByGroups(ctx context.Context, groupIDs []int64, onlyActions bool, limit int) ([]models.OrderedKeyBlock, error) {
	if len(groupIDs) == 0 {
		return nil, nil
	}
	q := "SELECT group_id, queue_id, msg_key, msg_offset, msg_count, attempts, next_at, paused, last_error, action, updated_at FROM ordered_key_blocks WHERE group_id IN (?" +
		strings.Repeat(",?", len(groupIDs)-1) + ")"
	if onlyActions {
		q += " AND action <> ''"
	}
	q += " ORDER BY group_id, queue_id, msg_key"
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	args := make([]any, len(groupIDs))
	for i, id := range groupIDs {
		args[i] = id
	}
	rows, err := s.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read blocked keys: %w", err)
	}
	defer rows.Close()
	var out []models.OrderedKeyBlock
	for rows.Next() {
		var b models.OrderedKeyBlock
		var key []byte
		var next sql.NullTime
		if err := rows.Scan(&b.GroupID, &b.QueueID, &key, &b.Offset, &b.Count, &b.Attempts, &next, &b.Paused, &b.LastError, &b.Action, &b.UpdatedAt); err != nil {
			return nil, fmt.Errorf("read blocked keys: %w", err)
		}
		b.Key = string(key)
		if next.Valid {
			b.NextAt = next.Time
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// OrderedKeyBlocksCount returns how many keys of group are blocked.
func (s *Cursors) OrderedKeyBlocksCount(ctx context.Context, groupID int64) (int, error) {
	var n int
	if err := s.sql.QueryRowContext(ctx, "SELECT COUNT(*) FROM ordered_key_blocks WHERE group_id = ?", groupID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count blocked keys: %w", err)
	}
	return n, nil
}

// OrderedKeyBlocksSave writes the owner's view of blocked keys in one transaction:
// each of set is inserted or updated (an operator's pending action is kept), each
// (group, queue, key) of cleared is deleted.
func (s *Cursors) OrderedKeyBlocksSave(ctx context.Context, set, cleared []models.OrderedKeyBlock) error {
	if len(set) == 0 && len(cleared) == 0 {
		return nil
	}
	tx, err := s.store().begin(ctx)
	if err != nil {
		return fmt.Errorf("begin blocked keys: %w", err)
	}
	defer tx.Rollback()
	for _, b := range set {
		var next any
		if !b.NextAt.IsZero() {
			next = b.NextAt.UTC()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ordered_key_blocks (group_id, queue_id, msg_key, msg_offset, msg_count, attempts, next_at, paused, last_error, updated_at)
			VALUES (?,?,?,?,?,?,?,?,?,NOW(3)) ON DUPLICATE KEY UPDATE msg_offset = VALUES(msg_offset), msg_count = VALUES(msg_count), attempts = VALUES(attempts),
			next_at = VALUES(next_at), paused = VALUES(paused), last_error = VALUES(last_error), updated_at = NOW(3)`,
			b.GroupID, b.QueueID, []byte(b.Key), b.Offset, b.Count, b.Attempts, next, b.Paused, truncate(b.LastError, 255)); err != nil {
			return fmt.Errorf("write blocked key %d/%d: %w", b.GroupID, b.QueueID, err)
		}
	}
	for _, b := range cleared {
		if _, err := tx.ExecContext(ctx, "DELETE FROM ordered_key_blocks WHERE group_id = ? AND queue_id = ? AND msg_key = ?", b.GroupID, b.QueueID, []byte(b.Key)); err != nil {
			return fmt.Errorf("clear blocked key %d/%d: %w", b.GroupID, b.QueueID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit blocked keys: %w", err)
	}
	return nil
}

// OrderedKeyBlockAction leaves an operator's action (models.OrderedActionSkip or
// OrderedActionResume) on the blocked key (group, queue, key) for its owner to
// apply. Errors: models.ErrNotFound when that key is not blocked.
func (s *Cursors) OrderedKeyBlockAction(ctx context.Context, groupID, queueID int64, key, action string) (models.OrderedKeyBlock, error) {
	// Read first: once the action is set, the owner may apply it and delete the
	// row (the key went through) before a read after the update would run.
	var b models.OrderedKeyBlock
	var next sql.NullTime
	err := s.sql.QueryRowContext(ctx, "SELECT msg_offset, msg_count, attempts, next_at, paused, last_error, updated_at FROM ordered_key_blocks WHERE group_id = ? AND queue_id = ? AND msg_key = ?",
		groupID, queueID, []byte(key)).Scan(&b.Offset, &b.Count, &b.Attempts, &next, &b.Paused, &b.LastError, &b.UpdatedAt)
	if err != nil {
		return b, notFound(err, fmt.Sprintf("blocked key %q on queue %d of group %d", key, queueID, groupID))
	}
	res, err := s.sql.ExecContext(ctx, "UPDATE ordered_key_blocks SET action = ?, updated_at = NOW(3) WHERE group_id = ? AND queue_id = ? AND msg_key = ?", action, groupID, queueID, []byte(key))
	if err != nil {
		return models.OrderedKeyBlock{}, fmt.Errorf("set blocked key action %d/%d: %w", groupID, queueID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return models.OrderedKeyBlock{}, fmt.Errorf("blocked key %q on queue %d of group %d: %w", key, queueID, groupID, models.ErrNotFound)
	}
	b.GroupID, b.QueueID, b.Key, b.Action = groupID, queueID, key, action
	if next.Valid {
		b.NextAt = next.Time
	}
	return b, nil
}

// OrderedKeyBlockActionDone clears action from (group, queue, key) once its owner
// applied it.
func (s *Cursors) OrderedKeyBlockActionDone(ctx context.Context, groupID, queueID int64, key, action string) error {
	_, err := s.sql.ExecContext(ctx, "UPDATE ordered_key_blocks SET action = '' WHERE group_id = ? AND queue_id = ? AND msg_key = ? AND action = ?", groupID, queueID, []byte(key), action)
	if err != nil {
		return fmt.Errorf("clear blocked key action %d/%d: %w", groupID, queueID, err)
	}
	return nil
}
