package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/models"
)

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
