package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
)

const delayedColumns = "topic_id, deliver_at_ms, tag, msg_key, headers, body, content_type, trace_id, created_at, producer_ip"

// DelayedInsert parks msgs (delayed messages of one topic, each with its
// DeliverAt) in delayed_messages, in one transaction on the control database with
// idem's row when idem is set (its response built by respond from msgs with their
// ids filled), and fills each message's ID. A live row of idem's key fails with
// models.ErrConflict and stores nothing.
func (s *Store) DelayedInsert(ctx context.Context, msgs []models.DelayedMessage, idem *IdempotencyRecord, respond func([]models.DelayedMessage) (int, []byte)) error {
	if len(msgs) == 0 {
		return nil
	}
	var sb strings.Builder
	sb.WriteString("INSERT INTO delayed_messages (" + delayedColumns + ") VALUES ")
	args := make([]any, 0, len(msgs)*10)
	for i, m := range msgs {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString("(?,?,?,?,?,?,?,?,?,?)")
		args = append(args, m.TopicID, m.DeliverAt.UnixMilli(), []byte(m.Tag), []byte(m.Key), headersJSON(m.Headers), m.Body, m.ContentType, m.TraceID, m.CreatedAt, m.ProducerIP)
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin parking delayed messages: %w", err)
	}
	defer tx.Rollback()
	ids, err := insertReturningIDs(ctx, tx, s.mariadb, sb.String(), args, len(msgs))
	if err != nil {
		return fmt.Errorf("park delayed messages: %w", err)
	}
	for i := range msgs {
		msgs[i].ID = ids[i]
	}
	if idem != nil {
		req := &PublishRequest{Idempotency: idem, Respond: func([]models.Message) (int, []byte) { return respond(msgs) }}
		if err := insertIdempotency(ctx, tx, []*PublishRequest{req}); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit parked delayed messages: %w", err)
	}
	return nil
}

// headersJSON is a message's headers as stored: a JSON object, or NULL for none.
func headersJSON(h map[string]string) any {
	if len(h) == 0 {
		return nil
	}
	b, _ := json.Marshal(h)
	return string(b)
}

// DelayedDue returns up to limit parked messages due by until (DeliverAt ≤ until),
// earliest first, with their bodies.
func (s *Store) DelayedDue(ctx context.Context, until time.Time, limit int) ([]models.DelayedMessage, error) {
	return s.delayedQuery(ctx, "WHERE deliver_at_ms <= ? ORDER BY deliver_at_ms, id LIMIT ?", until.UnixMilli(), limit)
}

// DelayedNext returns the earliest due time of any parked message, and false when
// none waits.
func (s *Store) DelayedNext(ctx context.Context) (time.Time, bool, error) {
	var at sql.NullInt64
	if err := s.sql.QueryRowContext(ctx, "SELECT MIN(deliver_at_ms) FROM delayed_messages").Scan(&at); err != nil {
		return time.Time{}, false, fmt.Errorf("read the next delayed message's time: %w", err)
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(at.Int64).UTC(), true, nil
}

// DelayedGet returns parked message id, or models.ErrNotFound once it was moved
// into its topic or cancelled (or never existed).
func (s *Store) DelayedGet(ctx context.Context, id int64) (*models.DelayedMessage, error) {
	m, err := scanDelayed(s.sql.QueryRowContext(ctx, "SELECT id, "+delayedColumns+" FROM delayed_messages WHERE id = ?", id))
	if err != nil {
		return nil, notFound(err, fmt.Sprintf("delayed message %d", id))
	}
	return &m, nil
}

// DelayedCancel deletes parked message id so it is never delivered. It returns
// models.ErrNotFound when no such message waits (already moved into its topic, or
// cancelled).
func (s *Store) DelayedCancel(ctx context.Context, id int64) error {
	res, err := s.sql.ExecContext(ctx, "DELETE FROM delayed_messages WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("cancel delayed message: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("cancel delayed message: %w", err)
	} else if n == 0 {
		return fmt.Errorf("delayed message %d: %w", id, models.ErrNotFound)
	}
	return nil
}

// DelayedCount returns how many parked messages of topicID wait (all topics when
// topicID is 0).
func (s *Store) DelayedCount(ctx context.Context, topicID int64) (int64, error) {
	q, args := "SELECT COUNT(*) FROM delayed_messages", []any{}
	if topicID > 0 {
		q, args = q+" WHERE topic_id = ?", append(args, topicID)
	}
	var n int64
	if err := s.sql.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count delayed messages: %w", err)
	}
	return n, nil
}

// scanDelayed reads one delayed_messages row (id, then delayedColumns) from a
// *sql.Row or *sql.Rows.
func scanDelayed(rows interface{ Scan(...any) error }) (models.DelayedMessage, error) {
	var m models.DelayedMessage
	var at int64
	var tag, key []byte
	var headers sql.NullString
	if err := rows.Scan(&m.ID, &m.TopicID, &at, &tag, &key, &headers, &m.Body, &m.ContentType, &m.TraceID, &m.CreatedAt, &m.ProducerIP); err != nil {
		return m, err
	}
	m.DeliverAt = time.UnixMilli(at).UTC()
	m.Tag, m.Key = string(tag), string(key)
	if headers.Valid {
		_ = json.Unmarshal([]byte(headers.String), &m.Headers)
	}
	return m, nil
}

// DelayedList returns up to limit parked messages of topicID, earliest due first,
// with their bodies.
func (s *Store) DelayedList(ctx context.Context, topicID int64, limit int) ([]models.DelayedMessage, error) {
	return s.delayedQuery(ctx, "WHERE topic_id = ? ORDER BY deliver_at_ms, id LIMIT ?", topicID, limit)
}

// delayedQuery reads the parked messages that where (a WHERE clause with its
// order and limit) selects, with their bodies.
func (s *Store) delayedQuery(ctx context.Context, where string, args ...any) ([]models.DelayedMessage, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT id, "+delayedColumns+" FROM delayed_messages "+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read delayed messages: %w", err)
	}
	defer rows.Close()
	var out []models.DelayedMessage
	for rows.Next() {
		m, err := scanDelayed(rows)
		if err != nil {
			return nil, fmt.Errorf("scan delayed message: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
