package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
)

// DeadLetterFilter selects dead letters of one group: by state (empty = any), by
// ids, and by creation time [From, To). Zero fields do not filter.
type DeadLetterFilter struct {
	GroupID int64
	State   models.DeadLetterState
	IDs     []int64
	From    time.Time
	To      time.Time
}

func (f DeadLetterFilter) where() (string, []any) {
	w := []string{"group_id = ?"}
	args := []any{f.GroupID}
	if f.State != "" {
		w = append(w, "state = ?")
		args = append(args, string(f.State))
	}
	if len(f.IDs) > 0 {
		w = append(w, "id IN ("+idList(f.IDs)+")")
	}
	if !f.From.IsZero() {
		w = append(w, "created_at >= ?")
		args = append(args, f.From.UTC())
	}
	if !f.To.IsZero() {
		w = append(w, "created_at < ?")
		args = append(args, f.To.UTC())
	}
	return strings.Join(w, " AND "), args
}

const deadLetterColumns = "id, group_id, queue_id, msg_offset, attempts, last_status, last_error, state, dlq_queue_id, dlq_offset, created_at, updated_at"

func scanDeadLetters(rows *sql.Rows) ([]models.DeadLetter, error) {
	defer rows.Close()
	var out []models.DeadLetter
	for rows.Next() {
		var d models.DeadLetter
		var st string
		var dq, do sql.NullInt64
		if err := rows.Scan(&d.ID, &d.GroupID, &d.QueueID, &d.Offset, &d.Attempts, &d.LastStatus, &d.LastError, &st, &dq, &do, &d.CreatedAt, &d.UpdatedAt); err != nil {
			return nil, err
		}
		d.State = models.DeadLetterState(st)
		if dq.Valid {
			d.DLQQueueID = &dq.Int64
		}
		if do.Valid {
			d.DLQOffset = &do.Int64
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DeadLetterList returns up to limit dead letters matching f with id > after, by id.
func (s *Store) DeadLetterList(ctx context.Context, f DeadLetterFilter, after int64, limit int) ([]models.DeadLetter, error) {
	w, args := f.where()
	rows, err := s.sql.QueryContext(ctx, "SELECT "+deadLetterColumns+" FROM dead_letters WHERE "+w+" AND id > ? ORDER BY id LIMIT ?", append(args, after, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return scanDeadLetters(rows)
}

// DeadLetterGet returns one dead letter of a group, or ErrNotFound.
func (s *Store) DeadLetterGet(ctx context.Context, groupID, id int64) (*models.DeadLetter, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT "+deadLetterColumns+" FROM dead_letters WHERE group_id = ? AND id = ?", groupID, id)
	if err != nil {
		return nil, fmt.Errorf("read dead letter: %w", err)
	}
	ds, err := scanDeadLetters(rows)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, fmt.Errorf("dead letter %d: %w", id, models.ErrNotFound)
	}
	return &ds[0], nil
}

// DeadLetterRedrive moves the pending dead letters matching f back to the group's
// retry topic (attempt 1, due now; the dispatcher paces them by the group's rate)
// and marks them redriven, once: a second redrive finds none pending. It returns
// how many moved.
func (s *Store) DeadLetterRedrive(ctx context.Context, f DeadLetterFilter) (int64, error) {
	f.State = models.DeadLetterPending
	w, args := f.where()
	tx, err := s.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO retry_messages (group_id, queue_id, msg_offset, attempt, due_at, claim_token, last_status, last_error, created_at, updated_at)
		SELECT group_id, queue_id, msg_offset, 1, NOW(3), '', last_status, last_error, NOW(3), NOW(3) FROM dead_letters WHERE `+w+`
		ON DUPLICATE KEY UPDATE attempt = 1, due_at = NOW(3), scheduled_at = NOW(3), claim_token = '', updated_at = NOW(3)`, args...)
	if err != nil {
		return 0, fmt.Errorf("redrive dead letters: %w", err)
	}
	res, err := tx.ExecContext(ctx, "UPDATE dead_letters SET state = 'redriven', updated_at = NOW(3) WHERE "+w, args...)
	if err != nil {
		return 0, fmt.Errorf("mark dead letters redriven: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, tx.Commit()
}

// DeadLetterPurge marks the pending dead letters matching f purged and returns how many.
func (s *Store) DeadLetterPurge(ctx context.Context, f DeadLetterFilter) (int64, error) {
	f.State = models.DeadLetterPending
	w, args := f.where()
	res, err := s.sql.ExecContext(ctx, "UPDATE dead_letters SET state = 'purged', updated_at = NOW(3) WHERE "+w, args...)
	if err != nil {
		return 0, fmt.Errorf("purge dead letters: %w", err)
	}
	return res.RowsAffected()
}

// DeadLetterCount returns how many pending dead letters a group has.
func (s *Store) DeadLetterCount(ctx context.Context, groupID int64) (int64, error) {
	var n int64
	err := s.sql.QueryRowContext(ctx, "SELECT COUNT(*) FROM dead_letters WHERE group_id = ? AND state = 'pending'", groupID).Scan(&n)
	return n, err
}

// DeadLetterOutbox appends up to limit dead letters not yet on a dead-letter topic to
// `<group>.dlq` (created with one queue on first use), each in one transaction with
// the mark, so a message is appended exactly once. A message whose origin topic is
// itself a dead-letter topic is never appended again (no loops): it is marked with
// dlq_offset 0. It returns the dead-letter queues it wrote to, for notification.
func (s *Store) DeadLetterOutbox(ctx context.Context, limit int) ([]int64, error) {
	rows, err := s.sql.QueryContext(ctx, `SELECT d.id, d.group_id, g.name, d.queue_id, d.msg_offset, t.name, d.attempts, d.last_status, d.last_error FROM dead_letters d
		JOIN consumer_groups g ON g.id = d.group_id JOIN queues q ON q.id = d.queue_id JOIN topics t ON t.id = q.topic_id
		WHERE d.dlq_offset IS NULL ORDER BY d.id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("read dead-letter outbox: %w", err)
	}
	var items []deadLetterOrigin
	for rows.Next() {
		var it deadLetterOrigin
		if err := rows.Scan(&it.id, &it.group, &it.groupName, &it.queue, &it.offset, &it.origin, &it.attempts, &it.lastStatus, &it.lastError); err != nil {
			rows.Close()
			return nil, err
		}
		items = append(items, it)
	}
	rows.Close()
	var touched []int64
	for _, it := range items {
		if models.ReservedName(it.origin) {
			if _, err := s.sql.ExecContext(ctx, "UPDATE dead_letters SET dlq_offset = 0 WHERE id = ? AND dlq_offset IS NULL", it.id); err != nil {
				return touched, err
			}
			continue
		}
		dlq, err := s.TopicGetByName(ctx, it.groupName+models.DeadLetterSuffix)
		if errors.Is(err, models.ErrNotFound) {
			var live int
			if err := s.sql.QueryRowContext(ctx, "SELECT COUNT(*) FROM consumer_groups WHERE id = ?", it.group).Scan(&live); err != nil {
				return touched, fmt.Errorf("dead-letter topic of group %d: %w", it.group, err)
			}
			if live == 0 {
				continue // the group was deleted since the read, its topic with it: not created again
			}
			dlq, err = s.TopicCreateReserved(ctx, it.groupName+models.DeadLetterSuffix, 1)
			if errors.Is(err, models.ErrConflict) {
				dlq, err = s.TopicGetByName(ctx, it.groupName+models.DeadLetterSuffix)
			}
		}
		if err != nil {
			return touched, fmt.Errorf("dead-letter topic of group %d: %w", it.group, err)
		}
		q := dlq.Queues[0].ID
		if err := s.appendDeadLetter(ctx, it, q); err != nil {
			return touched, err
		}
		touched = append(touched, q)
	}
	return touched, nil
}

// deadLetterOrigin is a dead letter waiting in the outbox, with what its copy's
// origin headers name.
type deadLetterOrigin struct {
	id, group, queue, offset int64
	groupName, origin        string
	attempts, lastStatus     int
	lastError                string
}

// headers returns the copy's headers: the publisher's plus the origin headers.
func (d deadLetterOrigin) headers(published []byte) (string, error) {
	h := map[string]string{}
	if len(published) > 0 {
		if err := json.Unmarshal(published, &h); err != nil {
			return "", fmt.Errorf("headers of msg_%d_%d: %w", d.queue, d.offset, err)
		}
	}
	lastError := d.lastError
	if lastError == "" && d.lastStatus != 0 {
		lastError = "http_status " + strconv.Itoa(d.lastStatus)
	}
	h[models.HeaderOriginID] = models.MessageID(d.queue, d.offset)
	h[models.HeaderOriginTopic] = d.origin
	h[models.HeaderOriginGroup] = d.groupName
	h[models.HeaderAttempts] = strconv.Itoa(d.attempts)
	h[models.HeaderLastError] = lastError
	b, err := json.Marshal(h)
	return string(b), err
}

// appendDeadLetter copies d's message to dlqQueue with the origin headers and marks
// d appended, in one transaction.
func (s *Store) appendDeadLetter(ctx context.Context, d deadLetterOrigin, dlqQueue int64) error {
	nodes, err := s.Nodes().queueNodes(ctx, []int64{d.queue, dlqQueue})
	if err != nil && !errors.Is(err, models.ErrNotFound) {
		return err
	}
	if nodes[d.queue] != models.PrimaryNodeID || nodes[dlqQueue] != models.PrimaryNodeID {
		return s.appendDeadLetterAcross(ctx, d, dlqQueue, nodes[d.queue], nodes[dlqQueue])
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var pending sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT dlq_offset FROM dead_letters WHERE id = ? FOR UPDATE", d.id).Scan(&pending); err != nil || pending.Valid {
		return err // already appended by another owner
	}
	src, dst := models.QueueTableName(d.queue), models.QueueTableName(dlqQueue)
	var newID int64
	var published []byte
	err = tx.QueryRowContext(ctx, "SELECT headers FROM "+src+" WHERE id = ?", d.offset).Scan(&published)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// The origin row is gone (retention): nothing to append.
	case err != nil:
		return fmt.Errorf("read dead letter %d: %w", d.id, err)
	default:
		headers, err := d.headers(published)
		if err != nil {
			return fmt.Errorf("append dead letter %d: %w", d.id, err)
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO "+dst+" (tag, msg_key, headers, body, content_type, trace_id, created_at, producer_ip) SELECT tag, msg_key, ?, body, content_type, trace_id, ?, producer_ip FROM "+src+" WHERE id = ?",
			headers, time.Now().UnixMilli(), d.offset)
		if err != nil {
			return fmt.Errorf("append dead letter %d: %w", d.id, err)
		}
		newID, err = res.LastInsertId()
		if n, _ := res.RowsAffected(); err != nil || n == 0 {
			newID = 0
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE dead_letters SET dlq_queue_id = ?, dlq_offset = ? WHERE id = ?", dlqQueue, newID, d.id); err != nil {
		return err
	}
	return tx.Commit()
}

// deadLetterCopyWindow bounds how far back appendDeadLetterAcross looks for a copy
// an interrupted earlier append left in the dead-letter queue.
const deadLetterCopyWindow = 24 * time.Hour

// appendDeadLetterAcross is appendDeadLetter when the origin queue or the
// dead-letter queue is not on the control database: the origin row is read on its
// node, then copied into the dead-letter queue's node in autocommit, then d is
// marked appended on the control database. A crash between the copy and the mark
// leaves d pending: the next append finds the copy (by its herald-origin-id and
// herald-origin-group headers, created within deadLetterCopyWindow) instead of
// appending it twice.
func (s *Store) appendDeadLetterAcross(ctx context.Context, d deadLetterOrigin, dlqQueue, srcNode, dstNode int64) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var pending sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT dlq_offset FROM dead_letters WHERE id = ? FOR UPDATE", d.id).Scan(&pending); err != nil || pending.Valid {
		return err // already appended by another owner
	}
	var newID int64
	var m models.Message
	var tag, key, published []byte
	var srcErr error
	if srcNode == 0 {
		srcErr = sql.ErrNoRows // the origin queue is gone
	} else if src, err := s.Nodes().nodeConn(ctx, srcNode); err != nil {
		return err
	} else {
		srcErr = src.QueryRowContext(ctx, "SELECT tag, msg_key, headers, body, content_type, trace_id, producer_ip FROM "+models.QueueTableName(d.queue)+" WHERE id = ?", d.offset).
			Scan(&tag, &key, &published, &m.Body, &m.ContentType, &m.TraceID, &m.ProducerIP)
	}
	switch {
	case errors.Is(srcErr, sql.ErrNoRows):
		// The origin row is gone (retention): nothing to append.
	case srcErr != nil:
		return fmt.Errorf("read dead letter %d: %w", d.id, srcErr)
	default:
		headers, err := d.headers(published)
		if err != nil {
			return fmt.Errorf("append dead letter %d: %w", d.id, err)
		}
		dst, err := s.Nodes().nodeConn(ctx, dstNode)
		if err != nil {
			return err
		}
		table := models.QueueTableName(dlqQueue)
		now := time.Now()
		err = dst.QueryRowContext(ctx, "SELECT id FROM "+table+" WHERE created_at >= ? AND JSON_VALUE(headers, '$.\""+models.HeaderOriginID+"\"') = ? AND JSON_VALUE(headers, '$.\""+models.HeaderOriginGroup+"\"') = ? ORDER BY id LIMIT 1",
			now.Add(-deadLetterCopyWindow).UnixMilli(), models.MessageID(d.queue, d.offset), d.groupName).Scan(&newID)
		if errors.Is(err, sql.ErrNoRows) {
			res, err := dst.ExecContext(ctx, "INSERT INTO "+table+" "+insertColumns+" VALUES (?,?,?,?,?,?,?,?)",
				tag, key, headers, m.Body, m.ContentType, m.TraceID, now.UnixMilli(), m.ProducerIP)
			if err != nil {
				return fmt.Errorf("append dead letter %d: %w", d.id, err)
			}
			if newID, err = res.LastInsertId(); err != nil {
				return fmt.Errorf("append dead letter %d: %w", d.id, err)
			}
		} else if err != nil {
			return fmt.Errorf("look for an earlier copy of dead letter %d: %w", d.id, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE dead_letters SET dlq_queue_id = ?, dlq_offset = ? WHERE id = ?", dlqQueue, newID, d.id); err != nil {
		return err
	}
	return tx.Commit()
}
