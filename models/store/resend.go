package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/models"
)

// ResendCandidate is a stored message a resend may select: its offset, tag,
// publish time (Unix ms) and, when read for a subscription with an attribute
// filter, its publisher headers (lower-case names, as stored; nil otherwise or
// when the message has none).
type ResendCandidate struct {
	Offset    int64
	Tag       string
	CreatedAt int64
	Headers   map[string]string
}

// ResendCandidates returns up to limit messages of one queue in id order with
// fromOffset ≤ offset ≤ toOffset and, when fromMS or toMS is not zero, fromMS ≤
// created_at < toMS (Unix ms). withHeaders also reads each message's headers, for
// a subscription whose attribute filter must decide (as QueueScanAttributes does
// for the dispatcher); other resends never read that column. It never reads bodies.
// A caller walking a long range calls it again from the last offset + 1.
func (s *Store) ResendCandidates(ctx context.Context, queueID, fromOffset, toOffset, fromMS, toMS int64, limit int, withHeaders bool) ([]ResendCandidate, error) {
	cols := "id, tag, created_at"
	if withHeaders {
		cols += ", headers"
	}
	q := "SELECT " + cols + " FROM " + models.QueueTableName(queueID) + " WHERE id >= ? AND id <= ?"
	args := []any{fromOffset, toOffset}
	if fromMS != 0 {
		q += " AND created_at >= ?"
		args = append(args, fromMS)
	}
	if toMS != 0 {
		q += " AND created_at < ?"
		args = append(args, toMS)
	}
	q += " ORDER BY id LIMIT ?"
	args = append(args, limit)
	c, err := s.Nodes().queueConn(ctx, queueID)
	if err != nil {
		return nil, fmt.Errorf("read resend candidates of queue %d: %w", queueID, err)
	}
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read resend candidates of queue %d: %w", queueID, err)
	}
	defer rows.Close()
	var out []ResendCandidate
	for rows.Next() {
		var c ResendCandidate
		var tag, headers []byte
		dest := []any{&c.Offset, &tag, &c.CreatedAt}
		if withHeaders {
			dest = append(dest, &headers)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read resend candidates of queue %d: %w", queueID, err)
		}
		c.Tag = string(tag)
		if c.Headers, err = decodeHeaders(headers, c.Offset); err != nil {
			return nil, fmt.Errorf("queue %d: %w", queueID, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read resend candidates of queue %d: %w", queueID, err)
	}
	return out, nil
}

// RetryResend puts messages of one queue into a group's retry topic, due now, so the
// group's owner sends them again at the group's rate under their usual webhook-id.
// Each row's attempt continues the message's recorded attempts for the group (one
// more than the highest in delivery_attempts, 1 when none is left). A message
// already waiting in the retry topic keeps its row. It returns how many rows it added.
func (s *Store) RetryResend(ctx context.Context, groupID, queueID int64, offsets []int64) (int, error) {
	total := 0
	for start := 0; start < len(offsets); start += 1000 {
		chunk := offsets[start:min(start+1000, len(offsets))]
		sel := make([]string, len(chunk))
		args := []any{groupID, queueID, queueID, groupID}
		for i, o := range chunk {
			sel[i] = "SELECT ? AS off"
			args = append(args, o)
		}
		q := "INSERT INTO retry_messages (group_id, queue_id, msg_offset, attempt, due_at, claim_token, last_status, last_error, created_at, updated_at) " +
			"SELECT ?, ?, o.off, COALESCE((SELECT MAX(a.attempt) FROM delivery_attempts a WHERE a.queue_id = ? AND a.msg_offset = o.off AND a.group_id = ?), 0) + 1, NOW(3), '', 0, 'resend', NOW(3), NOW(3) " +
			"FROM (" + strings.Join(sel, " UNION ALL ") + ") o ON DUPLICATE KEY UPDATE id = id"
		res, err := s.sql.ExecContext(ctx, q, args...)
		if err != nil {
			return total, fmt.Errorf("queue resends of group %d: %w", groupID, err)
		}
		n, _ := res.RowsAffected()
		total += int(n)
	}
	return total, nil
}
