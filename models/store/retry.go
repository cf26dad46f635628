package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
)

// Failure is one message whose POST failed and the attempt it was.
type Failure struct {
	QueueID    int64
	Offset     int64
	Attempt    int // the attempt that failed (1 = first delivery)
	LastStatus int
	LastError  string
}

// FailureOutcome says where RetryRecord put each failure: retry rows with their due
// times, or dead letters.
type FailureOutcome struct {
	Retried      []int64
	DeadLettered []int64
	NextDue      time.Time
}

// RetryRecord routes failed messages of one group (nothing when the group no longer
// exists): those with attempts left get (or
// keep) a retry row due after schedule's delay; the rest become dead letters in the
// transaction that deletes their retry rows, so a message is never in both. A first failure never
// overwrites an existing retry row (ON DUPLICATE KEY keeps it). Offsets are of one queue.
// fails are one POST's: failures of one attempt share one jittered due time, so the
// batch is claimed and re-sent whole, under the same batch id.
// Due times are on the database clock (NOW(3) read in the transaction), the clock
// RetryClaim compares them with, so a skewed api or worker clock neither delays a
// retry nor fires it early. NextDue is on the caller's clock: the database's wait
// added to time.Now(), so a caller never compares the two clocks.
func (s *Store) RetryRecord(ctx context.Context, groupID int64, maxAttempts int, schedule []int, fails []Failure) (FailureOutcome, error) {
	var out FailureOutcome
	if len(fails) == 0 {
		return out, nil
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return out, fmt.Errorf("begin retry record: %w", err)
	}
	defer tx.Rollback()
	// The group's row, share-locked: a group deleted meanwhile gets no retry row or
	// dead letter (a POST on the wire when the delete answered fails into nothing),
	// and a delete waits for this transaction, then removes what it wrote.
	var now time.Time
	err = tx.QueryRowContext(ctx, "SELECT NOW(3) FROM consumer_groups WHERE id = ? LOCK IN SHARE MODE", groupID).Scan(&now)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	} else if err != nil {
		return out, fmt.Errorf("read database clock: %w", err)
	}
	var retryVals, deadVals []string
	var retryArgs, deadArgs []any
	var deadKeys []string
	var deadKeyArgs []any
	delays := map[int]time.Duration{}
	for _, f := range fails {
		if f.Attempt >= maxAttempts {
			deadVals = append(deadVals, "(?,?,?,?,?,?,'pending',NOW(3),NOW(3))")
			deadArgs = append(deadArgs, groupID, f.QueueID, f.Offset, f.Attempt, f.LastStatus, truncate(f.LastError, 255))
			deadKeys = append(deadKeys, "(?,?)")
			deadKeyArgs = append(deadKeyArgs, f.QueueID, f.Offset)
			out.DeadLettered = append(out.DeadLettered, f.Offset)
			continue
		}
		delay, ok := delays[f.Attempt]
		if !ok {
			delay = models.RetryDelay(schedule, f.Attempt+1)
			delays[f.Attempt] = delay
		}
		due := now.Add(delay)
		if local := time.Now().Add(delay); out.NextDue.IsZero() || local.Before(out.NextDue) {
			out.NextDue = local
		}
		retryVals = append(retryVals, "(?,?,?,?,?,'',?,?,NOW(3),NOW(3))")
		retryArgs = append(retryArgs, groupID, f.QueueID, f.Offset, f.Attempt+1, due, f.LastStatus, truncate(f.LastError, 255))
		out.Retried = append(out.Retried, f.Offset)
	}
	if len(retryVals) > 0 {
		// A retry row that exists belongs to a later attempt: move it on only if this
		// failure is of the attempt it was waiting for (a retry), keep it otherwise.
		q := "INSERT INTO retry_messages (group_id, queue_id, msg_offset, attempt, due_at, claim_token, last_status, last_error, created_at, updated_at) VALUES " +
			strings.Join(retryVals, ",") +
			" ON DUPLICATE KEY UPDATE due_at = IF(VALUES(attempt) = attempt + 1, VALUES(due_at), due_at), claim_token = IF(VALUES(attempt) = attempt + 1, '', claim_token)," +
			" last_status = IF(VALUES(attempt) = attempt + 1, VALUES(last_status), last_status), last_error = IF(VALUES(attempt) = attempt + 1, VALUES(last_error), last_error)," +
			" scheduled_at = IF(VALUES(attempt) = attempt + 1, NOW(3), scheduled_at)," +
			" updated_at = NOW(3), attempt = IF(VALUES(attempt) = attempt + 1, VALUES(attempt), attempt)"
		if _, err := tx.ExecContext(ctx, q, retryArgs...); err != nil {
			return out, fmt.Errorf("write retry rows: %w", err)
		}
	}
	if len(deadVals) > 0 {
		q := "INSERT INTO dead_letters (group_id, queue_id, msg_offset, attempts, last_status, last_error, state, created_at, updated_at) VALUES " +
			strings.Join(deadVals, ",") +
			" ON DUPLICATE KEY UPDATE state = 'pending', attempts = VALUES(attempts), last_status = VALUES(last_status), last_error = VALUES(last_error), updated_at = NOW(3)"
		if _, err := tx.ExecContext(ctx, q, deadArgs...); err != nil {
			return out, fmt.Errorf("write dead letters: %w", err)
		}
		del := "DELETE FROM retry_messages WHERE group_id = ? AND (queue_id, msg_offset) IN (" + strings.Join(deadKeys, ",") + ")"
		if _, err := tx.ExecContext(ctx, del, append([]any{groupID}, deadKeyArgs...)...); err != nil {
			return out, fmt.Errorf("delete exhausted retry rows: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("commit retry record: %w", err)
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// RetryDelete removes delivered messages from a group's retry topic.
func (s *Store) RetryDelete(ctx context.Context, groupID, queueID int64, offsets []int64) error {
	if len(offsets) == 0 {
		return nil
	}
	_, err := s.sql.ExecContext(ctx, "DELETE FROM retry_messages WHERE group_id = ? AND queue_id = ? AND msg_offset IN ("+idList(offsets)+")", groupID, queueID)
	if err != nil {
		return fmt.Errorf("delete delivered retry rows: %w", err)
	}
	return nil
}

// RetryClaim claims up to limit due retry rows of a group with token, pushing their
// due time lease past now (so a crash leaves them due again), and returns them.
// Claims are partitioned by the group's owner, so no SKIP LOCKED is needed.
func (s *Store) RetryClaim(ctx context.Context, groupID int64, token string, lease time.Duration, limit int) ([]models.RetryMessage, error) {
	res, err := s.sql.ExecContext(ctx, "UPDATE retry_messages SET claim_token = ?, due_at = NOW(3) + INTERVAL ? MICROSECOND, scheduled_at = NOW(3) WHERE group_id = ? AND due_at <= NOW(3) ORDER BY due_at LIMIT ?",
		token, lease.Microseconds(), groupID, limit)
	if err != nil {
		return nil, fmt.Errorf("claim retries of group %d: %w", groupID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, nil
	}
	rows, err := s.sql.QueryContext(ctx, "SELECT queue_id, msg_offset, attempt, last_status, last_error, updated_at FROM retry_messages WHERE claim_token = ? ORDER BY queue_id, msg_offset", token)
	if err != nil {
		return nil, fmt.Errorf("read claimed retries: %w", err)
	}
	defer rows.Close()
	var out []models.RetryMessage
	for rows.Next() {
		m := models.RetryMessage{GroupID: groupID}
		if err := rows.Scan(&m.QueueID, &m.Offset, &m.Attempt, &m.LastStatus, &m.LastError, &m.FailedAt); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// RetryNextDue returns when a group's earliest retry row is due, or zero if none,
// on the caller's clock: the database's wait (MIN(due_at) − NOW(3)) added to
// time.Now(), so a database clock that differs from the caller's neither delays
// the claim nor makes it spin.
func (s *Store) RetryNextDue(ctx context.Context, groupID int64) (time.Time, error) {
	var us sql.NullInt64
	err := s.sql.QueryRowContext(ctx, "SELECT TIMESTAMPDIFF(MICROSECOND, NOW(3), MIN(due_at)) FROM retry_messages WHERE group_id = ?", groupID).Scan(&us)
	if err != nil {
		return time.Time{}, fmt.Errorf("read next retry of group %d: %w", groupID, err)
	}
	if !us.Valid {
		return time.Time{}, nil
	}
	return time.Now().Add(time.Duration(us.Int64) * time.Microsecond), nil
}

// RetryNextDueByGroups returns when each listed group's earliest retry row is due,
// on the caller's clock as RetryNextDue; groups with no row are absent. One
// statement (idx_retry_due), for a dispatcher that adopts many groups at once.
func (s *Store) RetryNextDueByGroups(ctx context.Context, groupIDs []int64) (map[int64]time.Time, error) {
	out := map[int64]time.Time{}
	if len(groupIDs) == 0 {
		return out, nil
	}
	rows, err := s.sql.QueryContext(ctx, "SELECT group_id, TIMESTAMPDIFF(MICROSECOND, NOW(3), MIN(due_at)) FROM retry_messages WHERE group_id IN ("+idList(groupIDs)+") GROUP BY group_id")
	if err != nil {
		return nil, fmt.Errorf("read next retries: %w", err)
	}
	defer rows.Close()
	now := time.Now()
	for rows.Next() {
		var g, us int64
		if err := rows.Scan(&g, &us); err != nil {
			return nil, fmt.Errorf("read next retries: %w", err)
		}
		out[g] = now.Add(time.Duration(us) * time.Microsecond)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read next retries: %w", err)
	}
	return out, nil
}

// RetryRelease makes claimed rows due again after delay (0: at once), on the database
// clock, for messages returned unattempted.
func (s *Store) RetryRelease(ctx context.Context, groupID, queueID int64, offsets []int64, delay time.Duration) error {
	if len(offsets) == 0 {
		return nil
	}
	_, err := s.sql.ExecContext(ctx, "UPDATE retry_messages SET claim_token = '', due_at = NOW(3) + INTERVAL ? MICROSECOND, scheduled_at = NOW(3) WHERE group_id = ? AND queue_id = ? AND msg_offset IN ("+idList(offsets)+")",
		max(delay, 0).Microseconds(), groupID, queueID)
	if err != nil {
		return fmt.Errorf("release retries of group %d: %w", groupID, err)
	}
	return nil
}

// RetryCount returns how many messages wait in a group's retry topic.
func (s *Store) RetryCount(ctx context.Context, groupID int64) (int64, error) {
	var n int64
	err := s.sql.QueryRowContext(ctx, "SELECT COUNT(*) FROM retry_messages WHERE group_id = ?", groupID).Scan(&n)
	return n, err
}

// RetryAddLate puts rows found after their hole closed into a group's retry topic,
// due now as attempt 1; an existing retry row is kept.
func (s *Store) RetryAddLate(ctx context.Context, groupID, queueID int64, offsets []int64) error {
	vals := make([]string, len(offsets))
	args := make([]any, 0, len(offsets)*3)
	for i, o := range offsets {
		vals[i] = "(?,?,?,1,NOW(3),'',0,'late_row',NOW(3),NOW(3))"
		args = append(args, groupID, queueID, o)
	}
	_, err := s.sql.ExecContext(ctx, "INSERT INTO retry_messages (group_id, queue_id, msg_offset, attempt, due_at, claim_token, last_status, last_error, created_at, updated_at) VALUES "+
		strings.Join(vals, ",")+" ON DUPLICATE KEY UPDATE id = id", args...)
	if err != nil {
		return fmt.Errorf("queue late rows: %w", err)
	}
	return nil
}
