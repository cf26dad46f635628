package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

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
	// Parked names the delayed_messages rows these messages were parked in
	// (DelayedDue): they are deleted in the same transaction, and a row already gone
	// (another mover, a cancel) fails the whole flush with models.ErrConflict.
	Parked []int64
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
func (s *Queues) MessagesInsert(ctx context.Context, reqs []*PublishRequest) error {
	ins, err := s.planInsert(ctx, reqs)
	if err != nil {
		return err
	}
	err = s.messagesInsert(ctx, reqs, ins)
	if err != nil && ctx.Err() == nil && Unavailable(err) && (len(ins.nodes) != 1 || ins.nodes[0] != models.PrimaryNodeID) {
		// A db node other than the control database did not answer: its queues are
		// unavailable, the rest of Herald is not.
		return fmt.Errorf("%w: %w", models.ErrQueueUnavailable, err)
	}
	return err
}

func (s *Queues) messagesInsert(ctx context.Context, reqs []*PublishRequest, ins *insertPlan) error {
	var err error
	if len(ins.nodes) > 1 || (ins.nodes[0] != models.PrimaryNodeID && controlRows(reqs)) {
		return s.messagesInsertXA(ctx, reqs, ins)
	}
	h, err := s.store().Nodes().node(ctx, ins.nodes[0])
	if err != nil {
		return err
	}
	// One INSERT and nothing else is atomic on its own: autocommit saves the BEGIN
	// and COMMIT round trips, which dominate single-message publishes.
	var tx execer = h.conn
	var commit func() error
	if len(ins.order) > 1 || controlRows(reqs) {
		var t txConn
		if h.id == models.PrimaryNodeID {
			t, err = s.store().begin(ctx)
		} else {
			t, err = h.db.BeginTx(ctx, nil)
		}
		if err != nil {
			return fmt.Errorf("begin publish: %w", err)
		}
		defer t.Rollback()
		tx, commit = t, t.Commit
	}
	for _, q := range ins.order {
		if err := insertQueueRows(ctx, tx, h.mariadb, reqs, q, ins.byQueue[q]); err != nil {
			return err
		}
	}
	if err := writeControlRows(ctx, tx, reqs); err != nil {
		return err
	}
	if commit != nil {
		if err := commit(); err != nil {
			return fmt.Errorf("commit publish: %w", err)
		}
	}
	return nil
}

// msgRef names message msg of request req in a flush.
type msgRef struct{ req, msg int }

// insertPlan is a flush's messages by queue (queues in first-seen order) and the
// db nodes those queues live on (first-seen order).
type insertPlan struct {
	byQueue map[int64][]msgRef
	order   []int64
	nodes   []int64
	byNode  map[int64][]int64
}

func (s *Queues) planInsert(ctx context.Context, reqs []*PublishRequest) (*insertPlan, error) {
	p := &insertPlan{byQueue: map[int64][]msgRef{}}
	for ri, r := range reqs {
		for mi := range r.Messages {
			q := r.Messages[mi].QueueID
			if q <= 0 {
				return nil, fmt.Errorf("publish: message %d of request %d has no queue: %w", mi, ri, models.ErrInvalid)
			}
			if _, ok := p.byQueue[q]; !ok {
				p.order = append(p.order, q)
			}
			p.byQueue[q] = append(p.byQueue[q], msgRef{ri, mi})
		}
	}
	if len(p.order) == 0 {
		return nil, fmt.Errorf("publish: no messages: %w", models.ErrInvalid)
	}
	var err error
	p.nodes, p.byNode, err = s.store().Nodes().byNode(ctx, p.order)
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	return p, nil
}

// insertQueueRows writes the referenced messages into queue q's table in one
// multi-row INSERT and fills their offsets.
func insertQueueRows(ctx context.Context, tx execer, mariadb bool, reqs []*PublishRequest, q int64, refs []msgRef) error {
	var sb strings.Builder
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
		args = append(args, []byte(m.Tag), []byte(m.Key), headersJSON(m.Headers), m.Body, m.ContentType, m.TraceID, m.CreatedAt, m.ProducerIP)
	}
	ids, err := insertReturningIDs(ctx, tx, mariadb, sb.String(), args, len(refs))
	if err != nil {
		return insertErr(q, err)
	}
	for i, rf := range refs {
		reqs[rf.req].Messages[rf.msg].Offset = ids[i]
	}
	return nil
}

// insertReturningIDs runs stmt, a multi-row INSERT of n rows into a table with an
// AUTO_INCREMENT id, and returns the ids in row order: `RETURNING id` on MariaDB,
// LAST_INSERT_ID()+i on MySQL 8 (a multi-row insert gets contiguous ids).
func insertReturningIDs(ctx context.Context, tx execer, mariadb bool, stmt string, args []any, n int) ([]int64, error) {
	ids := make([]int64, 0, n)
	if mariadb {
		rows, err := tx.QueryContext(ctx, stmt+" RETURNING id", args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			ids = append(ids, id)
		}
		// An error mid-stream (a trigger's SIGNAL) surfaces in Err, not Close.
		if err := rows.Err(); err != nil {
			rows.Close()
			return nil, err
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	} else {
		res, err := tx.ExecContext(ctx, stmt, args...)
		if err != nil {
			return nil, err
		}
		first, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		for i := range n {
			ids = append(ids, first+int64(i))
		}
	}
	if len(ids) != n {
		return nil, fmt.Errorf("got %d ids for %d rows", len(ids), n)
	}
	return ids, nil
}

// writeControlRows writes what reqs keep in the control database (on its
// connection tx): their idempotency rows, then the deletion of their parked rows.
// A live row of the same idempotency key, or a parked row already gone, fails with
// ErrConflict.
func writeControlRows(ctx context.Context, tx execer, reqs []*PublishRequest) error {
	if err := insertIdempotency(ctx, tx, reqs); err != nil {
		return err
	}
	var parked []int64
	for _, r := range reqs {
		parked = append(parked, r.Parked...)
	}
	if len(parked) == 0 {
		return nil
	}
	res, err := tx.ExecContext(ctx, "DELETE FROM delayed_messages WHERE id IN ("+idList(parked)+")")
	if err != nil {
		return fmt.Errorf("delete parked messages: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete parked messages: %w", err)
	} else if n != int64(len(parked)) {
		return fmt.Errorf("parked messages moved or cancelled meanwhile (%d of %d left): %w", n, len(parked), models.ErrConflict)
	}
	return nil
}

// insertIdempotency stores the idempotency rows of reqs (on the control database's
// connection tx); a live row of the same key fails with ErrConflict.
func insertIdempotency(ctx context.Context, tx execer, reqs []*PublishRequest) error {
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
	return nil
}

// insertErr wraps a failed insert into queue q; a sealed queue's refusal matches
// models.ErrQueueSealed, and so does a missing table: a move's old queue is sealed
// before it is retired and its table dropped, so a writer that read the topic
// before both finds no table, and retries on the topic as it is now.
func insertErr(q int64, err error) error {
	if isSealed(err) || isNoTable(err) {
		return fmt.Errorf("insert into queue %d: %w: %w", q, models.ErrQueueSealed, err)
	}
	return fmt.Errorf("insert into queue %d: %w", q, err)
}

// execer is what *sql.DB and *sql.Tx share.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func controlRows(reqs []*PublishRequest) bool {
	for _, r := range reqs {
		if r.Idempotency != nil || len(r.Parked) > 0 {
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
func (s *Queues) QueueScan(ctx context.Context, queueID, after int64, limit int) ([]RowMeta, error) {
	c, err := s.store().Nodes().queueConn(ctx, queueID)
	if err != nil {
		return nil, fmt.Errorf("scan queue %d: %w", queueID, err)
	}
	rows, err := c.QueryContext(ctx, "SELECT id, tag, created_at, msg_key FROM "+models.QueueTableName(queueID)+" WHERE id > ? ORDER BY id LIMIT ?", after, limit)
	if err != nil {
		return nil, fmt.Errorf("scan queue %d: %w", queueID, err)
	}
	return scanMeta(rows)
}

// QueueRowsByIDs re-reads the listed ids (open holes) of a queue.
func (s *Queues) QueueRowsByIDs(ctx context.Context, queueID int64, ids []int64) ([]RowMeta, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	c, err := s.store().Nodes().queueConn(ctx, queueID)
	if err != nil {
		return nil, fmt.Errorf("re-read holes of queue %d: %w", queueID, err)
	}
	rows, err := c.QueryContext(ctx, "SELECT id, tag, created_at, msg_key FROM "+models.QueueTableName(queueID)+" WHERE id IN ("+idList(ids)+") ORDER BY id")
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

// QueueMaxIDs returns the max offset of each listed queue: the dispatcher's
// fallback poll. A queue's max offset is its MAX(id), or the offset retention last
// deleted through when that is higher (a table retention emptied keeps its offset;
// 0 for a queue that never held a message). It runs one statement per db node per
// 200 queues. pruned_through lives in the control tables: for a queue on another
// node it can beat MAX(id) only when retention emptied the table (retention keeps
// every row above it), so only queues off the control database whose table reads
// empty cost one more statement on the control database, for all of them. A node
// other than 1 that does not answer, or is marked down (NodeIsDown: not tried),
// leaves its queues out of the map (never 0, which would read as a table behind its
// cursors) and its *NodeUnreachableError is returned, joined, with the other nodes'
// offsets.
func (s *Queues) QueueMaxIDs(ctx context.Context, queueIDs []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(queueIDs))
	if len(queueIDs) == 0 {
		return out, nil
	}
	nodes, byNode, err := s.store().Nodes().byNode(ctx, queueIDs)
	if err != nil {
		return nil, fmt.Errorf("read queue max offsets: %w", err)
	}
	var errs []error
	answered := map[int64]bool{}
	for _, n := range nodes {
		if s.store().Nodes().skipNode(n) {
			errs = append(errs, s.store().Nodes().unreachable(n, nil)) // probed back up in the background
			continue
		}
		nctx, cancel := s.store().Nodes().NodeContext(ctx, n)
		err := s.queueMaxIDsOn(nctx, n, byNode[n], out)
		cancel()
		if err != nil {
			if n == models.PrimaryNodeID {
				return nil, err
			}
			if s.store().Nodes().NodeOutage(n, err) {
				err = &NodeUnreachableError{Node: n, Err: err}
			}
			errs = append(errs, err) // the other nodes' queues still poll
			continue
		}
		answered[n] = true
	}
	var remote []int64
	for _, n := range nodes {
		if n == models.PrimaryNodeID || !answered[n] {
			continue
		}
		for _, q := range byNode[n] {
			if out[q] == 0 {
				remote = append(remote, q)
			}
		}
	}
	if len(remote) > 0 {
		pruned := map[int64]int64{}
		if err := scanPairs(ctx, s.sql, "SELECT id, pruned_through FROM queues WHERE pruned_through > 0 AND id IN ("+idList(remote)+")", pruned); err != nil {
			return nil, fmt.Errorf("read pruned offsets: %w", err)
		}
		for q, p := range pruned {
			out[q] = max(out[q], p)
		}
	}
	return out, errors.Join(errs...)
}

// queueMaxIDsOn reads MAX(id) of node's listed queues into out, one statement per
// 200 queues (on the control database with pruned_through, maxOffsetExpr).
func (s *Queues) queueMaxIDsOn(ctx context.Context, n int64, qs []int64, out map[int64]int64) error {
	c, err := s.store().Nodes().nodeConn(ctx, n)
	if err != nil {
		return fmt.Errorf("read queue max offsets on node %d: %w", n, err)
	}
	one := func(q int64) string {
		if n == models.PrimaryNodeID {
			return fmt.Sprintf("SELECT %d, %s", q, maxOffsetExpr(q))
		}
		return fmt.Sprintf("SELECT %d, (SELECT COALESCE(MAX(id), 0) FROM %s)", q, models.QueueTableName(q))
	}
	for start := 0; start < len(qs); start += 200 {
		end := min(start+200, len(qs))
		var sb strings.Builder
		for i, q := range qs[start:end] {
			if i > 0 {
				sb.WriteString(" UNION ALL ")
			}
			sb.WriteString(one(q))
		}
		err := scanPairs(ctx, c, sb.String(), out)
		if noSuchTable(err) {
			// A move's old queue was retired and its table dropped since the caller
			// listed it: read the batch queue by queue and leave the dropped ones out.
			for _, q := range qs[start:end] {
				if err = scanPairs(ctx, c, one(q), out); err != nil && !noSuchTable(err) {
					break
				}
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("read queue max offsets on node %d: %w", n, err)
		}
	}
	return nil
}

// noSuchTable reports whether err is MySQL's ER_NO_SUCH_TABLE (1146): a queue table
// dropped by a move's retirement.
func noSuchTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146
}

// scanPairs runs query, which returns (int64, int64) rows, into out.
func scanPairs(ctx context.Context, c conn, query string, out map[int64]int64) error {
	rows, err := c.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v int64
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		out[k] = v
	}
	return rows.Err()
}

// maxOffsetExpr is the SQL expression of queue q's max offset (QueueMaxIDs) for a
// queue on the control database: two primary-key reads. Only numbers reach the SQL
// text.
func maxOffsetExpr(q int64) string {
	return fmt.Sprintf("GREATEST((SELECT COALESCE(MAX(id), 0) FROM %s), COALESCE((SELECT pruned_through FROM queues WHERE id = %d), 0))", models.QueueTableName(q), q)
}

// MessagesGet loads the listed offsets of one queue with bodies, in offset order.
// Missing offsets are simply absent from the result.
func (s *Queues) MessagesGet(ctx context.Context, queueID int64, offsets []int64) ([]models.Message, error) {
	if len(offsets) == 0 {
		return nil, nil
	}
	c, err := s.store().Nodes().queueConn(ctx, queueID)
	if err != nil {
		return nil, fmt.Errorf("load messages of queue %d: %w", queueID, err)
	}
	rows, err := c.QueryContext(ctx, "SELECT id, tag, msg_key, headers, body, content_type, trace_id, created_at, producer_ip FROM "+
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
// (created_at, then queue and offset descending), reading every queue of a db node
// in one UNION statement and merging the nodes' pages. A db node other than 1 that
// does not answer, or is marked down, is left out (NodeOutage marks it). Key and tag filters are not indexed: on very large queues give a time
// range, which uses the created_at index. Only numbers reach the SQL text.
func (s *Queues) MessagesBrowse(ctx context.Context, t *models.Topic, f MessageFilter, limit int) ([]MessageSummary, error) {
	if len(t.Queues) == 0 {
		return nil, nil
	}
	parts := map[int64][]string{}
	args := map[int64][]any{}
	var nodes []int64
	for _, q := range t.Queues {
		n := nodeOrPrimary(q.NodeID)
		if _, ok := parts[n]; !ok {
			nodes = append(nodes, n)
		}
		var where []string
		var a []any
		if f.Key != "" {
			where = append(where, "msg_key = ?")
			a = append(a, []byte(f.Key))
		}
		if f.Tag != "" {
			where = append(where, "tag = ?")
			a = append(a, []byte(f.Tag))
		}
		if f.FromMS > 0 {
			where = append(where, "created_at >= ?")
			a = append(a, f.FromMS)
		}
		if f.ToMS > 0 {
			where = append(where, "created_at < ?")
			a = append(a, f.ToMS)
		}
		if b := f.Before; b != nil {
			switch {
			case q.ID < b.Queue:
				where = append(where, "created_at <= ?")
				a = append(a, b.CreatedAtMS)
			case q.ID == b.Queue:
				where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
				a = append(a, b.CreatedAtMS, b.CreatedAtMS, b.Offset)
			default:
				where = append(where, "created_at < ?")
				a = append(a, b.CreatedAtMS)
			}
		}
		cond := ""
		if len(where) > 0 {
			cond = " WHERE " + strings.Join(where, " AND ")
		}
		args[n] = append(args[n], a...)
		parts[n] = append(parts[n], fmt.Sprintf("(SELECT %d AS q, id, tag, msg_key, content_type, LENGTH(body) AS n, created_at FROM %s%s ORDER BY created_at DESC, id DESC LIMIT %d)",
			q.ID, models.QueueTableName(q.ID), cond, limit))
	}
	var out []MessageSummary
	for _, n := range nodes {
		if s.store().Nodes().skipNode(n) {
			continue // a down node's messages are left out; the caller shows NodesDown
		}
		nctx, cancel := s.store().Nodes().NodeContext(ctx, n)
		c, err := s.store().Nodes().nodeConn(nctx, n)
		var page []MessageSummary
		if err == nil {
			query := strings.Join(parts[n], " UNION ALL ") + fmt.Sprintf(" ORDER BY created_at DESC, q DESC, id DESC LIMIT %d", limit)
			page, err = browsePage(nctx, c, query, args[n])
		}
		cancel()
		if s.store().Nodes().NodeOutage(n, err) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("browse messages of %s on node %d: %w", t.Name, n, err)
		}
		out = append(out, page...)
	}
	if len(nodes) > 1 {
		slices.SortFunc(out, func(a, b MessageSummary) int {
			if c := cmp.Compare(b.CreatedAt, a.CreatedAt); c != 0 {
				return c
			}
			if c := cmp.Compare(b.QueueID, a.QueueID); c != 0 {
				return c
			}
			return cmp.Compare(b.Offset, a.Offset)
		})
		out = out[:min(len(out), limit)]
	}
	return out, nil
}

func browsePage(ctx context.Context, c conn, query string, args []any) ([]MessageSummary, error) {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
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
func (s *Queues) MessageGetByID(ctx context.Context, id string) (*models.Message, string, error) {
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
