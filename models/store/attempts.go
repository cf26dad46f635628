package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
)

// AttemptsInsert writes delivery attempts in multi-row INSERTs of at most 1,000 rows.
func (s *Store) AttemptsInsert(ctx context.Context, as []models.DeliveryAttempt) error {
	for start := 0; start < len(as); start += 1000 {
		chunk := as[start:min(start+1000, len(as))]
		vals := make([]string, len(chunk))
		args := make([]any, 0, len(chunk)*10)
		for i, a := range chunk {
			vals[i] = "(?,?,?,?,?,?,?,?,?,?)"
			var excerpt any
			if len(a.Excerpt) > 0 {
				excerpt = a.Excerpt
			}
			args = append(args, a.GroupID, a.QueueID, a.Offset, a.WebhookID, a.Attempt, a.Status, a.ErrorClass, a.LatencyMS, excerpt, a.CreatedAt.UTC())
		}
		_, err := s.sql.ExecContext(ctx, "INSERT INTO delivery_attempts (group_id, queue_id, msg_offset, webhook_id, attempt, status, error_class, latency_ms, response_excerpt, created_at) VALUES "+strings.Join(vals, ","), args...)
		if err != nil {
			return fmt.Errorf("insert delivery attempts: %w", err)
		}
	}
	return nil
}

// AttemptsByMessage returns every recorded attempt of one message, oldest first.
func (s *Store) AttemptsByMessage(ctx context.Context, queueID, offset int64) ([]models.DeliveryAttempt, error) {
	return s.attempts(ctx, "queue_id = ? AND msg_offset = ? ORDER BY created_at, id LIMIT 500", queueID, offset)
}

// AttemptsByWebhookID returns every recorded attempt (one row per member message)
// of the POSTs sent under webhookID, a batch's `bat_` id, oldest first; at most 5,000.
func (s *Store) AttemptsByWebhookID(ctx context.Context, webhookID string) ([]models.DeliveryAttempt, error) {
	return s.attempts(ctx, "webhook_id = ? ORDER BY created_at, id LIMIT 5000", webhookID)
}

// AttemptsByGroup returns a group's latest attempts, newest first.
func (s *Store) AttemptsByGroup(ctx context.Context, groupID int64, limit int) ([]models.DeliveryAttempt, error) {
	return s.attempts(ctx, "group_id = ? ORDER BY created_at DESC, id DESC LIMIT ?", groupID, limit)
}

func (s *Store) attempts(ctx context.Context, where string, args ...any) ([]models.DeliveryAttempt, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT group_id, queue_id, msg_offset, webhook_id, attempt, status, error_class, latency_ms, response_excerpt, created_at FROM delivery_attempts WHERE "+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read delivery attempts: %w", err)
	}
	defer rows.Close()
	var out []models.DeliveryAttempt
	for rows.Next() {
		var a models.DeliveryAttempt
		var excerpt []byte
		if err := rows.Scan(&a.GroupID, &a.QueueID, &a.Offset, &a.WebhookID, &a.Attempt, &a.Status, &a.ErrorClass, &a.LatencyMS, &excerpt, &a.CreatedAt); err != nil {
			return nil, err
		}
		a.Excerpt = excerpt
		out = append(out, a)
	}
	return out, rows.Err()
}

// AttemptsPartitions keeps delivery_attempts partitioned by day: it splits the
// catch-all partition so today and the next two days have their own, and drops
// partitions wholly older than retention. Safe to call repeatedly.
func (s *Store) AttemptsPartitions(ctx context.Context, now time.Time, retention time.Duration) error {
	rows, err := s.sql.QueryContext(ctx, "SELECT PARTITION_NAME FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'delivery_attempts' AND PARTITION_NAME IS NOT NULL")
	if err != nil {
		return fmt.Errorf("list attempt partitions: %w", err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err == nil {
			have[n] = true
		}
	}
	rows.Close()
	day := now.UTC().Truncate(24 * time.Hour)
	var add []string
	for i := range 3 {
		d := day.AddDate(0, 0, i)
		name := "p" + d.Format("20060102")
		if !have[name] {
			add = append(add, fmt.Sprintf("PARTITION %s VALUES LESS THAN ('%s')", name, d.AddDate(0, 0, 1).Format("2006-01-02")))
		}
	}
	if len(add) > 0 {
		q := "ALTER TABLE delivery_attempts REORGANIZE PARTITION p_max INTO (" + strings.Join(add, ", ") + ", PARTITION p_max VALUES LESS THAN (MAXVALUE))"
		if _, err := s.sql.ExecContext(ctx, q); err != nil && !strings.Contains(err.Error(), "VALUES LESS THAN value must be strictly increasing") {
			return fmt.Errorf("add attempt partitions: %w", err)
		}
	}
	cutoff := day.Add(-retention)
	for name := range have {
		if d, err := time.Parse("20060102", strings.TrimPrefix(name, "p")); err == nil && d.AddDate(0, 0, 1).Before(cutoff) {
			if _, err := s.sql.ExecContext(ctx, "ALTER TABLE delivery_attempts DROP PARTITION "+name); err != nil {
				return fmt.Errorf("drop attempt partition %s: %w", name, err)
			}
		}
	}
	return nil
}

// GroupHealth is the owning dispatcher's view of a group's failure counters and
// breaker, persisted for the stats API and the console (never written per POST).
type GroupHealth struct {
	GroupID             int64
	ConsecutiveFailures int
	BreakerState        string // closed, open, half_open
	BreakerOpenUntil    *time.Time
	BreakerCooldownMS   int64
	EffectiveRate       float64 // messages/s; 0 = the configured rate
	LastStatus          int
	LastError           string
	LastSuccessAt       *time.Time
	FailingSince        *time.Time
	ThrottledUntil      *time.Time
	SuccessesMinute     int
	FailuresMinute      int
	UpdatedAt           time.Time
}

// GroupHealthSave upserts the given groups' health rows, 200 rows per statement.
func (s *Store) GroupHealthSave(ctx context.Context, hs ...GroupHealth) error {
	for start := 0; start < len(hs); start += 200 {
		chunk := hs[start:min(start+200, len(hs))]
		var sb strings.Builder
		args := make([]any, 0, 13*len(chunk))
		for i, h := range chunk {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?,NOW(3))")
			args = append(args, h.GroupID, h.ConsecutiveFailures, h.BreakerState, h.BreakerOpenUntil, h.BreakerCooldownMS, h.EffectiveRate, h.LastStatus,
				truncate(h.LastError, 255), h.LastSuccessAt, h.FailingSince, h.ThrottledUntil, h.SuccessesMinute, h.FailuresMinute)
		}
		_, err := s.sql.ExecContext(ctx, `INSERT INTO group_health (group_id, consecutive_failures, breaker_state, breaker_open_until, breaker_cooldown_ms, effective_rate,
		last_status, last_error, last_success_at, failing_since, throttled_until, successes_minute, failures_minute, updated_at)
		VALUES `+sb.String()+` ON DUPLICATE KEY UPDATE consecutive_failures = VALUES(consecutive_failures), breaker_state = VALUES(breaker_state),
		breaker_open_until = VALUES(breaker_open_until), breaker_cooldown_ms = VALUES(breaker_cooldown_ms), effective_rate = VALUES(effective_rate),
		last_status = VALUES(last_status), last_error = VALUES(last_error), last_success_at = VALUES(last_success_at), failing_since = VALUES(failing_since),
		throttled_until = VALUES(throttled_until), successes_minute = VALUES(successes_minute), failures_minute = VALUES(failures_minute), updated_at = NOW(3)`, args...)
		if err != nil {
			return fmt.Errorf("save health of %d groups: %w", len(chunk), err)
		}
	}
	return nil
}

// GroupHealthGet returns a group's health, or a closed-breaker zero value if none was saved.
func (s *Store) GroupHealthGet(ctx context.Context, groupID int64) (GroupHealth, error) {
	h := GroupHealth{GroupID: groupID, BreakerState: "closed"}
	var ou, ls, fs, tu sql.NullTime
	err := s.sql.QueryRowContext(ctx, `SELECT consecutive_failures, breaker_state, breaker_open_until, breaker_cooldown_ms, effective_rate, last_status, last_error,
		last_success_at, failing_since, throttled_until, successes_minute, failures_minute, updated_at FROM group_health WHERE group_id = ?`, groupID).
		Scan(&h.ConsecutiveFailures, &h.BreakerState, &ou, &h.BreakerCooldownMS, &h.EffectiveRate, &h.LastStatus, &h.LastError, &ls, &fs, &tu, &h.SuccessesMinute, &h.FailuresMinute, &h.UpdatedAt)
	if err == sql.ErrNoRows {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("read health of group %d: %w", groupID, err)
	}
	for _, p := range []struct {
		src *sql.NullTime
		dst **time.Time
	}{{&ou, &h.BreakerOpenUntil}, {&ls, &h.LastSuccessAt}, {&fs, &h.FailingSince}, {&tu, &h.ThrottledUntil}} {
		if p.src.Valid {
			t := p.src.Time
			*p.dst = &t
		}
	}
	return h, nil
}
