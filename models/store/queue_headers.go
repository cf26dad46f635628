package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald/models"
)

// RowAttributes is what a dispatcher reads of a queue row for a cursor whose
// subscription has an attribute filter: RowMeta plus the publisher's headers
// (lower-case names; nil when the row has none). Never the body.
type RowAttributes struct {
	RowMeta
	Headers map[string]string
}

// QueueScanAttributes is QueueScan with each row's headers, for cursors whose
// group filters on attributes; the others never read the headers column.
func (s *Queues) QueueScanAttributes(ctx context.Context, queueID, after int64, limit int) ([]RowAttributes, error) {
	c, err := s.store().Nodes().queueConn(ctx, queueID)
	if err != nil {
		return nil, fmt.Errorf("scan queue %d with headers: %w", queueID, err)
	}
	rows, err := c.QueryContext(ctx, "SELECT id, tag, created_at, msg_key, headers FROM "+models.QueueTableName(queueID)+" WHERE id > ? ORDER BY id LIMIT ?", after, limit)
	if err != nil {
		return nil, fmt.Errorf("scan queue %d with headers: %w", queueID, err)
	}
	return scanAttributes(rows)
}

// QueueRowsByIDsAttributes is QueueRowsByIDs with each row's headers.
func (s *Queues) QueueRowsByIDsAttributes(ctx context.Context, queueID int64, ids []int64) ([]RowAttributes, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	c, err := s.store().Nodes().queueConn(ctx, queueID)
	if err != nil {
		return nil, fmt.Errorf("re-read holes of queue %d with headers: %w", queueID, err)
	}
	rows, err := c.QueryContext(ctx, "SELECT id, tag, created_at, msg_key, headers FROM "+models.QueueTableName(queueID)+" WHERE id IN ("+idList(ids)+") ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("re-read holes of queue %d with headers: %w", queueID, err)
	}
	return scanAttributes(rows)
}

func scanAttributes(rows *sql.Rows) ([]RowAttributes, error) {
	defer rows.Close()
	var out []RowAttributes
	for rows.Next() {
		var m RowAttributes
		var tag, key, headers []byte
		if err := rows.Scan(&m.ID, &tag, &m.CreatedAt, &key, &headers); err != nil {
			return nil, err
		}
		m.Tag, m.Key = string(tag), string(key)
		var err error
		if m.Headers, err = decodeHeaders(headers, m.ID); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// decodeHeaders decodes a queue row's headers column (a JSON object of lower-case
// names to values; empty for none, then nil) of row id.
func decodeHeaders(b []byte, id int64) (map[string]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var h map[string]string
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("headers of row %d: %w", id, err)
	}
	return h, nil
}
