package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
)

// PublishRequest is one publish request inside a group-commit flush. Messages must
// have QueueID set by the time MessagesInsert runs, which fills their Offset; a
// keyless message may leave it 0 for the group-commit writer to choose among
// Spread. Idempotency, when set, is stored in the same transaction with the
// response Respond builds from the offsets.
type PublishRequest struct {
	Messages []models.Message
	// TopicID and Spread (the topic's writable queue ids) let the writer put every
	// keyless message (QueueID 0) of one flush and topic into one queue.
	TopicID     int64
	Spread      []int64
	Idempotency *IdempotencyRecord
	Respond     func(msgs []models.Message) (status int, body []byte)
}

// IdempotencyRecord is a stored publish outcome, scoped to (API key, topic, key) and
// kept IdempotencyTTL (24 h). RequestHash is the SHA-256 of the request body.
type IdempotencyRecord struct {
	APIKeyID    int64
	TopicID     int64
	Key         string
	RequestHash []byte
	Status      int
	Response    []byte
}

const insertColumns = "(tag, msg_key, headers, body, content_type, trace_id, created_at, producer_ip)"

// MessagesInsert stores every message of reqs in one transaction: one multi-row
// INSERT per touched queue table, then the requests' idempotency rows. Ids come from
// `RETURNING id` on MariaDB and LAST_INSERT_ID()+i on MySQL 8 (multi-row inserts get
// contiguous ids). All requests are stored or none; an idempotency key whose row is
// younger than IdempotencyTTL fails the whole flush with models.ErrConflict so the
// caller can retry each alone (an expired row is replaced).
func (s *Store) MessagesInsert(ctx context.Context, reqs []*PublishRequest) error {
	type ref struct{ req, msg int }
	byQueue := map[int64][]ref{}
	var order []int64
	for ri, r := range reqs {
		for mi := range r.Messages {
			q := r.Messages[mi].QueueID
			if q <= 0 {
				return fmt.Errorf("publish: message %d of request %d has no queue: %w", mi, ri, models.ErrInvalid)
			}
			if _, ok := byQueue[q]; !ok {
				order = append(order, q)
			}
			byQueue[q] = append(byQueue[q], ref{ri, mi})
		}
	}
	// One INSERT and nothing else is atomic on its own: autocommit saves the BEGIN
	// and COMMIT round trips, which dominate single-message publishes.
	var tx execer = s.sql
	var commit func() error
	if len(order) > 1 || hasIdempotency(reqs) {
		t, err := s.begin(ctx)
		if err != nil {
			return fmt.Errorf("begin publish: %w", err)
		}
		defer t.Rollback()
		tx, commit = t, t.Commit
	}
	var sb strings.Builder
	for _, q := range order {
		refs := byQueue[q]
		sb.Reset()
		sb.WriteString("INSERT INTO ")
		sb.WriteString(models.QueueTableName(q))
		sb.WriteString(" ")
		sb.WriteString(insertColumns)
		sb.WriteString(" VALUES ")
		args := make([]any, 0, len(refs)*8)
		for i, rf := range refs {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString("(?,?,?,?,?,?,?,?)")
			m := &reqs[rf.req].Messages[rf.msg]
			var headers any
			if len(m.Headers) > 0 {
				b, _ := json.Marshal(m.Headers)
				headers = string(b)
			}
			args = append(args, []byte(m.Tag), []byte(m.Key), headers, m.Body, m.ContentType, m.TraceID, m.CreatedAt, m.ProducerIP)
		}
		ids := make([]int64, 0, len(refs))
		if s.mariadb {
			sb.WriteString(" RETURNING id")
			rows, err := tx.QueryContext(ctx, sb.String(), args...)
			if err != nil {
				return insertErr(q, err)
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, id)
			}
			// An error mid-stream (a trigger's SIGNAL) surfaces in Err, not Close.
			if err := rows.Err(); err != nil {
				rows.Close()
				return insertErr(q, err)
			}
			if err := rows.Close(); err != nil {
				return insertErr(q, err)
			}
		} else {
			res, err := tx.ExecContext(ctx, sb.String(), args...)
			if err != nil {
				return insertErr(q, err)
			}
			first, err := res.LastInsertId()
			if err != nil {
				return err
			}
			for i := range refs {
				ids = append(ids, first+int64(i))
			}
		}
		if len(ids) != len(refs) {
			return fmt.Errorf("insert into queue %d: got %d ids for %d rows", q, len(ids), len(refs))
		}
		for i, rf := range refs {
			reqs[rf.req].Messages[rf.msg].Offset = ids[i]
		}
	}
	for _, r := range reqs {
		if r.Idempotency == nil {
			continue
		}
		rec := r.Idempotency
		rec.Status, rec.Response = r.Respond(r.Messages)
		res, err := tx.ExecContext(ctx, idempotencyInsert, rec.APIKeyID, rec.TopicID, []byte(rec.Key), rec.RequestHash, rec.Status, rec.Response)
		if err != nil {
			return fmt.Errorf("insert idempotency key: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("insert idempotency key: %w", err)
		} else if n == 0 {
			// The key's row is younger than IdempotencyTTL: a concurrent request won.
			return fmt.Errorf("idempotency key: %w", models.ErrConflict)
		}
	}
	if commit != nil {
		if err := commit(); err != nil {
			return fmt.Errorf("commit publish: %w", err)
		}
	}
	return nil
}

// insertErr wraps a failed insert into queue q; a sealed queue's refusal matches
// models.ErrQueueSealed.
func insertErr(q int64, err error) error {
	if isSealed(err) {
		return fmt.Errorf("insert into queue %d: %w: %w", q, models.ErrQueueSealed, err)
	}
	return fmt.Errorf("insert into queue %d: %w", q, err)
}

// execer is what *sql.DB and *sql.Tx share.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func hasIdempotency(reqs []*PublishRequest) bool {
	for _, r := range reqs {
		if r.Idempotency != nil {
			return true
		}
	}
	return false
}

// IdempotencyTTL is how long a stored publish outcome answers for its key
// (database time, from the row's created_at). An older row counts as absent: the
// key's next publish replaces it, and maintenance deletes it (IdempotencyPrune).
const IdempotencyTTL = 24 * time.Hour

// idempotencyExpired is the SQL condition, on an idempotency_keys row, that it is
// older than IdempotencyTTL.
const idempotencyExpired = "created_at <= NOW(3) - INTERVAL 86400 SECOND"

// idempotencyInsert stores a key's outcome, replacing an expired row of the same key
// in place (one statement, the primary key's row lock). Without CLIENT_FOUND_ROWS it
// affects 1 row for a new key, 2 for a replaced expired one and 0 when a live row
// holds the key. created_at is assigned last: MySQL evaluates the assignments left
// to right, so the earlier IFs still see the old created_at.
const idempotencyInsert = `INSERT INTO idempotency_keys (api_key_id, topic_id, idem_key, request_hash, status_code, response, created_at)
  VALUES (?,?,?,?,?,?,NOW(3))
  ON DUPLICATE KEY UPDATE
    request_hash = IF(` + idempotencyExpired + `, VALUES(request_hash), request_hash),
    status_code = IF(` + idempotencyExpired + `, VALUES(status_code), status_code),
    response = IF(` + idempotencyExpired + `, VALUES(response), response),
    created_at = IF(` + idempotencyExpired + `, VALUES(created_at), created_at)`

// IdempotencyGet returns the stored outcome for (apiKeyID, topicID, key) if it is
// younger than IdempotencyTTL, or ErrNotFound (also for an expired row not yet
// pruned).
func (s *Store) IdempotencyGet(ctx context.Context, apiKeyID, topicID int64, key string) (*IdempotencyRecord, error) {
	rec := &IdempotencyRecord{APIKeyID: apiKeyID, TopicID: topicID, Key: key}
	err := s.sql.QueryRowContext(ctx, "SELECT request_hash, status_code, response FROM idempotency_keys WHERE api_key_id = ? AND topic_id = ? AND idem_key = ? AND NOT ("+idempotencyExpired+")",
		apiKeyID, topicID, []byte(key)).Scan(&rec.RequestHash, &rec.Status, &rec.Response)
	if err != nil {
		return nil, notFound(err, "idempotency key")
	}
	return rec, nil
}

// RowMeta is what a dispatcher reads of a queue row: never the body.
type RowMeta struct {
	ID        int64
	Tag       string
	CreatedAt int64 // Unix ms
	// Key is the message key (msg_key), which groups ordered by key order on.
	Key string
}

// QueueScan reads up to limit rows with id > after in id order (never an id range:
// ranges stall on gaps).
func (s *Store) QueueScan(ctx context.Context, queueID, after int64, limit int) ([]RowMeta, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT id, tag, created_at, msg_key FROM "+models.QueueTableName(queueID)+" WHERE id > ? ORDER BY id LIMIT ?", after, limit)
	if err != nil {
		return nil, fmt.Errorf("scan queue %d: %w", queueID, err)
	}
	return scanMeta(rows)
}

// QueueRowsByIDs re-reads the listed ids (open holes) of a queue.
func (s *Store) QueueRowsByIDs(ctx context.Context, queueID int64, ids []int64) ([]RowMeta, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.sql.QueryContext(ctx, "SELECT id, tag, created_at, msg_key FROM "+models.QueueTableName(queueID)+" WHERE id IN ("+idList(ids)+") ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("re-read holes of queue %d: %w", queueID, err)
	}
	return scanMeta(rows)
}

func scanMeta(rows *sql.Rows) ([]RowMeta, error) {
	defer rows.Close()
	var out []RowMeta
	for rows.Next() {
		var m RowMeta
		var tag, key []byte
		if err := rows.Scan(&m.ID, &tag, &m.CreatedAt, &key); err != nil {
			return nil, err
		}
		m.Tag, m.Key = string(tag), string(key)
		out = append(out, m)
	}
	return out, rows.Err()
}

// idList formats integers for an IN list; only numbers reach the SQL text.
func idList(ids []int64) string {
	b := make([]byte, 0, len(ids)*8)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

// QueueMaxIDs returns the max offset of each listed queue in one statement per 200
// queues: the dispatcher's fallback poll. A queue's max offset is its MAX(id), or
// the offset retention last deleted through when that is higher (a table retention
// emptied keeps its offset; 0 for a queue that never held a message).
func (s *Store) QueueMaxIDs(ctx context.Context, queueIDs []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(queueIDs))
	for start := 0; start < len(queueIDs); start += 200 {
		end := min(start+200, len(queueIDs))
		var sb strings.Builder
		for i, q := range queueIDs[start:end] {
			if i > 0 {
				sb.WriteString(" UNION ALL ")
			}
			fmt.Fprintf(&sb, "SELECT %d, %s", q, maxOffsetExpr(q))
		}
		rows, err := s.sql.QueryContext(ctx, sb.String())
		if err != nil {
			return nil, fmt.Errorf("read queue max offsets: %w", err)
		}
		for rows.Next() {
			var q, m int64
			if err := rows.Scan(&q, &m); err != nil {
				rows.Close()
				return nil, err
			}
			out[q] = m
		}
		rows.Close()
	}
	return out, nil
}

// maxOffsetExpr is the SQL expression of queue q's max offset (QueueMaxIDs): two
// primary-key reads. Only numbers reach the SQL text.
func maxOffsetExpr(q int64) string {
	return fmt.Sprintf("GREATEST((SELECT COALESCE(MAX(id), 0) FROM %s), COALESCE((SELECT pruned_through FROM queues WHERE id = %d), 0))", models.QueueTableName(q), q)
}

// MessagesGet loads the listed offsets of one queue with bodies, in offset order.
// Missing offsets are simply absent from the result.
func (s *Store) MessagesGet(ctx context.Context, queueID int64, offsets []int64) ([]models.Message, error) {
	if len(offsets) == 0 {
		return nil, nil
	}
	rows, err := s.sql.QueryContext(ctx, "SELECT id, tag, msg_key, headers, body, content_type, trace_id, created_at, producer_ip FROM "+
		models.QueueTableName(queueID)+" WHERE id IN ("+idList(offsets)+") ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("load messages of queue %d: %w", queueID, err)
	}
	defer rows.Close()
	out := make([]models.Message, 0, len(offsets))
	for rows.Next() {
		m := models.Message{QueueID: queueID}
		var tag, key []byte
		var headers sql.RawBytes
		if err := rows.Scan(&m.Offset, &tag, &key, &headers, &m.Body, &m.ContentType, &m.TraceID, &m.CreatedAt, &m.ProducerIP); err != nil {
			return nil, err
		}
		m.Tag, m.Key = string(tag), string(key)
		if len(headers) > 0 {
			_ = json.Unmarshal(headers, &m.Headers)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// MessageFilter narrows a topic's message browse. Key and Tag match exactly
// (byte-exact, empty = any); FromMS and ToMS bound created_at in Unix ms (FromMS
// inclusive, ToMS exclusive, 0 = open). Before continues a page: only messages that
// sort after it (newest first: created_at, queue, offset descending) are returned.
type MessageFilter struct {
	Key, Tag     string
	FromMS, ToMS int64
	Before       *MessagePosition
}

// MessagePosition is a message's place in the browse order.
type MessagePosition struct {
	CreatedAtMS int64
	Queue       int64
	Offset      int64
}

// MessageSummary is a browsed message without its body: BodyBytes is its size.
type MessageSummary struct {
	QueueID     int64
	Offset      int64
	Tag         string
	Key         string
	ContentType string
	BodyBytes   int64
	CreatedAt   int64 // Unix ms
}

// MessagesBrowse returns up to limit messages of topic t matching f, newest first
// (created_at, then queue and offset descending), reading every queue in one UNION
// statement. Key and tag filters are not indexed: on very large queues give a time
// range, which uses the created_at index. Only numbers reach the SQL text.
func (s *Store) MessagesBrowse(ctx context.Context, t *models.Topic, f MessageFilter, limit int) ([]MessageSummary, error) {
	if len(t.Queues) == 0 {
		return nil, nil
	}
	var parts []string
	var args []any
	for _, q := range t.Queues {
		var where []string
		if f.Key != "" {
			where = append(where, "msg_key = ?")
			args = append(args, []byte(f.Key))
		}
		if f.Tag != "" {
			where = append(where, "tag = ?")
			args = append(args, []byte(f.Tag))
		}
		if f.FromMS > 0 {
			where = append(where, "created_at >= ?")
			args = append(args, f.FromMS)
		}
		if f.ToMS > 0 {
			where = append(where, "created_at < ?")
			args = append(args, f.ToMS)
		}
		if b := f.Before; b != nil {
			switch {
			case q.ID < b.Queue:
				where = append(where, "created_at <= ?")
				args = append(args, b.CreatedAtMS)
			case q.ID == b.Queue:
				where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
				args = append(args, b.CreatedAtMS, b.CreatedAtMS, b.Offset)
			default:
				where = append(where, "created_at < ?")
				args = append(args, b.CreatedAtMS)
			}
		}
		cond := ""
		if len(where) > 0 {
			cond = " WHERE " + strings.Join(where, " AND ")
		}
		parts = append(parts, fmt.Sprintf("(SELECT %d AS q, id, tag, msg_key, content_type, LENGTH(body) AS n, created_at FROM %s%s ORDER BY created_at DESC, id DESC LIMIT %d)",
			q.ID, models.QueueTableName(q.ID), cond, limit))
	}
	query := strings.Join(parts, " UNION ALL ") + fmt.Sprintf(" ORDER BY created_at DESC, q DESC, id DESC LIMIT %d", limit)
	rows, err := s.sql.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("browse messages of %s: %w", t.Name, err)
	}
	defer rows.Close()
	var out []MessageSummary
	for rows.Next() {
		var m MessageSummary
		var tag, key []byte
		if err := rows.Scan(&m.QueueID, &m.Offset, &tag, &key, &m.ContentType, &m.BodyBytes, &m.CreatedAt); err != nil {
			return nil, err
		}
		m.Tag, m.Key = string(tag), string(key)
		out = append(out, m)
	}
	return out, rows.Err()
}

// MessageGetByID returns the message `msg_<queue>_<offset>` with its body and the
// name of its topic. Errors wrap ErrInvalid for a malformed id and ErrNotFound for
// an unknown queue or offset.
func (s *Store) MessageGetByID(ctx context.Context, id string) (*models.Message, string, error) {
	q, off, err := models.ParseMessageID(id)
	if err != nil {
		return nil, "", err
	}
	var topic string
	if err := s.db.WithContext(ctx).Raw("SELECT t.name FROM queues q JOIN topics t ON t.id = q.topic_id WHERE q.id = ?", q).Scan(&topic).Error; err != nil {
		return nil, "", fmt.Errorf("find queue %d: %w", q, err)
	}
	if topic == "" {
		return nil, "", fmt.Errorf("message %s: %w", id, models.ErrNotFound)
	}
	ms, err := s.MessagesGet(ctx, q, []int64{off})
	if err != nil {
		return nil, "", err
	}
	if len(ms) == 0 {
		return nil, "", fmt.Errorf("message %s: %w", id, models.ErrNotFound)
	}
	return &ms[0], topic, nil
}
