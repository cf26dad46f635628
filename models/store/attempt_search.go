package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
)

// AttemptFilter selects one group's delivery attempts (AttemptsSearch).
// StatusFrom..StatusTo (an inclusive range of HTTP statuses such as 500..599, or
// 503..503; StatusTo 0: any) filters on the answer; ErrorClass ("": any) on the failure
// class; Since (inclusive) and Until (exclusive), zero for unbounded, on the
// attempt's time. After, when set, continues a newest-first listing strictly after
// (older than) that attempt. Limit caps the rows (1 or more).
type AttemptFilter struct {
	GroupID              int64
	StatusFrom, StatusTo int
	ErrorClass           string
	Since, Until         time.Time
	After                *AttemptPosition
	Limit                int
}

// AttemptPosition is an attempt's place in a newest-first listing: its time and row id.
type AttemptPosition struct {
	CreatedAt time.Time
	ID        int64
}

// AttemptRecord is one delivery attempt with its row id and listing position.
type AttemptRecord struct {
	ID int64
	models.DeliveryAttempt
}

// Position is r's place in a newest-first listing, to continue after it.
func (r AttemptRecord) Position() AttemptPosition {
	return AttemptPosition{CreatedAt: r.CreatedAt, ID: r.ID}
}

// attemptSearchSQL builds AttemptsSearch's statement. Every filter is a condition on
// idx_attempts_group (group_id, created_at) or, with an error class,
// idx_attempts_group_class (group_id, error_class, created_at); a time range also
// prunes the day partitions.
func attemptSearchSQL(f AttemptFilter) (string, []any) {
	where := []string{"group_id = ?"}
	args := []any{f.GroupID}
	if f.ErrorClass != "" {
		where = append(where, "error_class = ?")
		args = append(args, f.ErrorClass)
	}
	if f.StatusTo != 0 {
		where = append(where, "status BETWEEN ? AND ?")
		args = append(args, f.StatusFrom, f.StatusTo)
	}
	if !f.Since.IsZero() {
		where = append(where, "created_at >= ?")
		args = append(args, f.Since.UTC())
	}
	if !f.Until.IsZero() {
		where = append(where, "created_at < ?")
		args = append(args, f.Until.UTC())
	}
	if f.After != nil {
		at := f.After.CreatedAt.UTC()
		where = append(where, "created_at <= ? AND (created_at < ? OR id < ?)")
		args = append(args, at, at, f.After.ID)
	}
	args = append(args, max(f.Limit, 1))
	return "SELECT id, group_id, queue_id, msg_offset, webhook_id, attempt, status, error_class, latency_ms, response_excerpt, created_at FROM delivery_attempts WHERE " +
		strings.Join(where, " AND ") + " ORDER BY created_at DESC, id DESC LIMIT ?", args
}

// AttemptsSearch returns a group's attempts matching f, newest first (by time, then
// row id), at most f.Limit. One statement.
func (s *Store) AttemptsSearch(ctx context.Context, f AttemptFilter) ([]AttemptRecord, error) {
	q, args := attemptSearchSQL(f)
	rows, err := s.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search attempts of group %d: %w", f.GroupID, err)
	}
	defer rows.Close()
	var out []AttemptRecord
	for rows.Next() {
		var r AttemptRecord
		var excerpt []byte
		if err := rows.Scan(&r.ID, &r.GroupID, &r.QueueID, &r.Offset, &r.WebhookID, &r.Attempt, &r.Status, &r.ErrorClass, &r.LatencyMS, &excerpt, &r.CreatedAt); err != nil {
			return nil, fmt.Errorf("search attempts of group %d: %w", f.GroupID, err)
		}
		r.Excerpt = excerpt
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search attempts of group %d: %w", f.GroupID, err)
	}
	return out, nil
}
