package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
)

// GroupDeleted is what GroupDelete removed: the group's id, the queues it had cursors
// on (for the workers' fences) and its dead-letter topic's name when that went too.
type GroupDeleted struct {
	GroupID  int64
	Queues   []int64
	DLQTopic string
}

// GroupDelete removes group name: its subscriptions, cursors, retry rows, health and
// expiry counters at once, and its `<name>.dlq` topic. Its dead letters and attempt
// log stay until purgeAfter (maintenance's DeletedGroupsPurge removes them), or are
// removed before it returns when purge is set. Errors: ErrNotFound; an *InUseError
// (matching models.ErrInUse) naming the other groups that subscribe to its
// dead-letter topic, in which case nothing changes.
func (s *Store) GroupDelete(ctx context.Context, name string, purge bool, purgeAfter time.Time) (GroupDeleted, error) {
	g, err := s.GroupGetByName(ctx, name)
	if err != nil {
		return GroupDeleted{}, err
	}
	out := GroupDeleted{GroupID: g.ID}
	dlq, err := s.TopicGetByName(ctx, name+models.DeadLetterSuffix)
	switch {
	case errors.Is(err, models.ErrNotFound):
		dlq = nil
	case err != nil:
		return out, err
	default:
		subs, err := s.TopicSubscribers(ctx, dlq.ID)
		if err != nil {
			return out, err
		}
		if len(subs) > 0 {
			return out, &InUseError{What: "dead-letter topic " + dlq.Name, By: subs}
		}
	}
	err = s.WithTx(ctx, func(tx *Store) error {
		if err := tx.db.Raw("SELECT DISTINCT queue_id FROM cursors WHERE group_id = ? ORDER BY queue_id FOR UPDATE", g.ID).Scan(&out.Queues).Error; err != nil {
			return fmt.Errorf("read cursors of group %d: %w", g.ID, err)
		}
		for _, stmt := range []string{
			"DELETE FROM subscriptions WHERE group_id = ?",
			"DELETE FROM cursors WHERE group_id = ?",
			"DELETE FROM retry_messages WHERE group_id = ?",
			"DELETE FROM group_health WHERE group_id = ?",
			"DELETE FROM retention_expired WHERE group_id = ?",
			"DELETE FROM ordered_blocks WHERE group_id = ?",
			"DELETE FROM ordered_key_blocks WHERE group_id = ?",
			"DELETE FROM consumer_groups WHERE id = ?",
		} {
			if err := tx.db.Exec(stmt, g.ID).Error; err != nil {
				return fmt.Errorf("delete group %d: %w", g.ID, err)
			}
		}
		if !purge {
			err := tx.db.Exec("INSERT INTO deleted_groups (group_id, name, deleted_at, purge_after) VALUES (?, ?, NOW(3), ?)", g.ID, g.Name, purgeAfter.UTC()).Error
			if err != nil {
				return fmt.Errorf("record deleted group %d: %w", g.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	if dlq != nil {
		// Subscribers were checked above; one added since makes this refuse, and the
		// topic then stays as an ordinary one.
		if _, err := s.TopicDelete(ctx, dlq.Name, false); err != nil && !errors.Is(err, models.ErrNotFound) {
			return out, fmt.Errorf("delete dead-letter topic %s: %w", dlq.Name, err)
		}
		out.DLQTopic = dlq.Name
	}
	if purge {
		if _, err := s.groupRowsPurge(ctx, g.ID, 0); err != nil {
			return out, err
		}
	}
	return out, nil
}

// purgeChunk is how many rows one DELETE of a purge or prune removes at most.
const purgeChunk = 1000

// groupRowsPurge deletes a deleted group's dead letters and attempt rows in chunks
// of purgeChunk, at most maxChunks per table (0: until none is left), and reports
// whether none is left.
func (s *Store) groupRowsPurge(ctx context.Context, groupID int64, maxChunks int) (done bool, err error) {
	done = true
	for _, stmt := range []string{
		"DELETE FROM dead_letters WHERE group_id = ? ORDER BY id LIMIT ?",
		"DELETE FROM delivery_attempts WHERE group_id = ? LIMIT ?",
	} {
		n, err := s.deleteChunks(ctx, stmt, maxChunks, groupID)
		if err != nil {
			return false, fmt.Errorf("purge rows of deleted group %d: %w", groupID, err)
		}
		if maxChunks > 0 && n >= int64(maxChunks*purgeChunk) {
			done = false
		}
	}
	return done, nil
}

// deleteChunks runs stmt (its last placeholder the LIMIT) until it deletes fewer
// than purgeChunk rows or maxChunks ran (0: no cap), and returns the rows deleted.
func (s *Store) deleteChunks(ctx context.Context, stmt string, maxChunks int, args ...any) (int64, error) {
	var total int64
	for i := 0; maxChunks == 0 || i < maxChunks; i++ {
		res, err := s.sql.ExecContext(ctx, stmt, append(args, purgeChunk)...)
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
		if n < purgeChunk {
			break
		}
	}
	return total, nil
}

// DeletedGroupsPurge removes the dead letters and attempt rows of groups deleted
// with a grace period that has passed by now (database time), at most maxChunks
// chunks of purgeChunk rows per table and group per call, and forgets a group once
// none is left. It returns how many groups it finished.
func (s *Store) DeletedGroupsPurge(ctx context.Context, maxChunks int) (int, error) {
	var ids []int64
	if err := s.db.WithContext(ctx).Raw("SELECT group_id FROM deleted_groups WHERE purge_after <= NOW(3) ORDER BY purge_after LIMIT 100").Scan(&ids).Error; err != nil {
		return 0, fmt.Errorf("read deleted groups: %w", err)
	}
	finished := 0
	for _, id := range ids {
		done, err := s.groupRowsPurge(ctx, id, maxChunks)
		if err != nil {
			return finished, err
		}
		if !done {
			continue
		}
		if _, err := s.sql.ExecContext(ctx, "DELETE FROM deleted_groups WHERE group_id = ?", id); err != nil {
			return finished, fmt.Errorf("forget deleted group %d: %w", id, err)
		}
		finished++
	}
	return finished, nil
}

// DeadLettersExpire deletes dead letters older than their group's
// dead_letter_retention_hours (database time), at most maxChunks chunks of
// purgeChunk rows per group per call, and returns how many it deleted. One
// statement finds the groups that have any to expire (an index probe per group
// and state on idx_dead_letters_state), so a run with nothing to expire costs one
// statement, not one per group.
func (s *Store) DeadLettersExpire(ctx context.Context, maxChunks int) (int64, error) {
	var groups []struct {
		ID                       int64
		DeadLetterRetentionHours int
	}
	states := models.DeadLetterStates()
	args := make([]any, len(states))
	for i, st := range states {
		args[i] = string(st)
	}
	q := `SELECT g.id, g.dead_letter_retention_hours FROM consumer_groups g WHERE EXISTS (SELECT 1 FROM dead_letters d
		WHERE d.group_id = g.id AND d.state IN (?` + strings.Repeat(", ?", len(states)-1) + `) AND d.created_at < NOW(3) - INTERVAL g.dead_letter_retention_hours HOUR)`
	if err := s.db.WithContext(ctx).Raw(q, args...).Scan(&groups).Error; err != nil {
		return 0, fmt.Errorf("read groups with expired dead letters: %w", err)
	}
	var total int64
	for _, g := range groups {
		n, err := s.deleteChunks(ctx, "DELETE FROM dead_letters WHERE group_id = ? AND created_at < NOW(3) - INTERVAL ? HOUR ORDER BY id LIMIT ?", maxChunks, g.ID, g.DeadLetterRetentionHours)
		total += n
		if err != nil {
			return total, fmt.Errorf("expire dead letters of group %d: %w", g.ID, err)
		}
	}
	return total, nil
}
