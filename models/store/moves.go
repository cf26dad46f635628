package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald/models"
)

// ErrTopicMoving means a topic still has a queue being sealed or drained by an
// earlier move: one move at a time per topic.
var ErrTopicMoving = errors.New("already moving: an earlier move's old queues are not retired yet")

// sealMessage is the MESSAGE_TEXT a sealed queue's trigger signals; isSealed finds it.
const sealMessage = "herald: queue sealed"

// sealTrigger names queue id's seal trigger (numbers only, like its table).
func sealTrigger(id int64) string { return models.QueueTableName(id) + "_sealed" }

// isSealed reports whether err is a sealed queue's trigger refusing an insert
// (SIGNAL SQLSTATE '45000': error 1644 with sealMessage).
func isSealed(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1644 && strings.HasPrefix(me.Message, sealMessage)
}

const moveColumns = "m.id, m.topic_id, m.from_queue_id, m.to_queue_id, m.slots, COALESCE(m.watermark, -1), m.created_at, m.sealed_at, m.retired_at"

func scanMoves(rows *sql.Rows) ([]models.QueueMove, error) {
	defer rows.Close()
	var out []models.QueueMove
	for rows.Next() {
		var m models.QueueMove
		var slots string
		if err := rows.Scan(&m.ID, &m.TopicID, &m.From, &m.To, &slots, &m.Watermark, &m.CreatedAt, &m.SealedAt, &m.Retired); err != nil {
			return nil, fmt.Errorf("scan queue move: %w", err)
		}
		_ = json.Unmarshal([]byte(slots), &m.Slots)
		out = append(out, m)
	}
	return out, rows.Err()
}

// QueueMovesActive returns every move whose old queue is not retired yet (sealing or
// draining), in id order: what dispatchers hold ordered groups on.
func (s *Nodes) QueueMovesActive(ctx context.Context) ([]models.QueueMove, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT "+moveColumns+" FROM queue_moves m WHERE m.retired_at IS NULL ORDER BY m.id")
	if err != nil {
		return nil, fmt.Errorf("read queue moves: %w", err)
	}
	return scanMoves(rows)
}

// TopicMoves returns topic id's moves not retired yet, in id order.
func (s *Nodes) TopicMoves(ctx context.Context, topicID int64) ([]models.QueueMove, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT "+moveColumns+" FROM queue_moves m WHERE m.topic_id = ? AND m.retired_at IS NULL ORDER BY m.id", topicID)
	if err != nil {
		return nil, fmt.Errorf("read moves of topic %d: %w", topicID, err)
	}
	return scanMoves(rows)
}

// TopicMoveBegin starts moving every live queue of topic t (read-write or read-only)
// to db node toNode, and returns one move per old queue, not sealed yet. It is one
// transaction on the control database that first locks the topic's row (FOR
// UPDATE) and reads the topic again under that lock, so the check that no earlier
// move is unretired and the switch are one step: of concurrent moves of one topic
// (or a move and a drain moving it), the first to lock wins and every other waits
// for it, then finds its move and returns ErrTopicMoving. Under the lock: toNode is
// checked read-write (its registry row share-locked, so a drain setting it
// draining waits, or is waited for); as many new queues are placed on toNode and
// their tables created there (on the node's own pool, outside the transaction:
// a table that outlives a rolled-back move is dropped again); a cursor at offset 0
// on each new queue for every subscribed group; the move rows; the slot table
// pointing every moved slot at its new queue; the old queues `sealing`, the new
// ones read-write. A fresh writer then sends keyed and keyless messages to the new
// queues; a stale writer may still insert into an old queue until QueueSeal.
// Errors: ErrTopicMoving while an earlier move is not retired, models.ErrNotFound
// when the topic was deleted, models.ErrInvalid when it has no live queue,
// ErrNoWritableNode when toNode takes no queues.
func (s *Nodes) TopicMoveBegin(ctx context.Context, t *models.Topic, toNode int64) ([]models.QueueMove, error) {
	var out []models.QueueMove
	var made []int64 // queue tables created on toNode, dropped again if the move fails
	err := s.store().WithTx(ctx, func(tx *Store) error {
		cur, next, err := tx.lockTopicForChange(ctx, t, "")
		if err != nil {
			return err
		}
		var from []models.Queue
		for _, q := range cur.Queues {
			if q.State == models.QueueReadWrite || q.State == models.QueueReadOnly {
				from = append(from, q)
			}
		}
		if len(from) == 0 {
			return fmt.Errorf("topic %s has no live queue: %w", t.Name, models.ErrInvalid)
		}
		if len(cur.Slots) != models.KeySlots {
			cur.Slots = models.InitialSlots(from)
		}
		if err := tx.Nodes().placeQueuesOn(ctx, toNode); err != nil {
			return err
		}
		now := time.Now().UTC()
		added := make([]queueRow, len(from))
		for i := range from {
			added[i] = queueRow{TopicID: t.ID, NodeID: toNode, Position: next + i, State: string(models.QueueReadOnly), CreatedAt: now}
		}
		if err := tx.db.Create(&added).Error; err != nil {
			return fmt.Errorf("insert queues: %w", err)
		}
		// The node's own pool, not this transaction: DDL on node 1 would commit it.
		c, err := s.nodeConn(ctx, toNode)
		if err != nil {
			return err
		}
		to := make([]models.Queue, len(added))
		for i, q := range added {
			made = append(made, q.ID)
			if _, err := c.ExecContext(ctx, models.QueueTableDDL(models.QueueTableName(q.ID))); err != nil {
				return fmt.Errorf("create queue table %d: %w", q.ID, err)
			}
			to[i] = models.Queue{ID: q.ID, TopicID: t.ID, NodeID: toNode, Position: q.Position, State: models.QueueReadWrite}
		}
		moved, slots := models.MovePlan(cur.Slots, from, to)
		for i, q := range from {
			err := tx.db.Exec(`INSERT INTO cursors (group_id, queue_id, committed_offset, holes, version, owner, updated_at)
				SELECT group_id, ?, 0, '[]', 1, '', NOW(3) FROM subscriptions WHERE topic_id = ?`, to[i].ID, t.ID).Error
			if err != nil {
				return fmt.Errorf("insert cursors of queue %d: %w", to[i].ID, err)
			}
			b, _ := json.Marshal(nonNilInts(moved[q.ID]))
			res, err := tx.sql.ExecContext(ctx, "INSERT INTO queue_moves (topic_id, from_queue_id, to_queue_id, slots, created_at) VALUES (?,?,?,?,NOW(3))", t.ID, q.ID, to[i].ID, string(b))
			if isDuplicate(err) {
				// uq_queue_moves_from: the queue was moved once already.
				return fmt.Errorf("topic %s, queue %d: %w", t.Name, q.ID, ErrTopicMoving)
			} else if err != nil {
				return fmt.Errorf("insert move of queue %d: %w", q.ID, err)
			}
			id, _ := res.LastInsertId()
			out = append(out, models.QueueMove{ID: id, TopicID: t.ID, From: q.ID, To: to[i].ID, Slots: moved[q.ID], Watermark: -1, CreatedAt: now})
			if err := tx.db.Exec("UPDATE queues SET state = ? WHERE id = ?", string(models.QueueSealing), q.ID).Error; err != nil {
				return fmt.Errorf("seal queue %d: %w", q.ID, err)
			}
			if err := tx.db.Exec("UPDATE queues SET state = ? WHERE id = ?", string(models.QueueReadWrite), to[i].ID).Error; err != nil {
				return fmt.Errorf("open queue %d: %w", to[i].ID, err)
			}
		}
		return tx.db.Exec("UPDATE topics SET key_slots = ?, updated_at = NOW(3) WHERE id = ?", encodeSlots(slots), t.ID).Error
	})
	if err != nil {
		for _, q := range made {
			// Their rows were rolled back; a table left behind holds nothing.
			if derr := s.store().queueTableDrop(context.WithoutCancel(ctx), q, toNode); derr != nil {
				err = fmt.Errorf("%w (and drop queue table %d: %v)", err, q, derr)
			}
		}
		return nil, err
	}
	return out, nil
}

func nonNilInts(v []int) []int {
	if v == nil {
		return []int{}
	}
	return v
}

// placeQueuesOn checks, in the caller's transaction, that node takes new queues
// (read-write), locking its registry row in share mode so a concurrent state change
// waits for the queues.
func (s *Nodes) placeQueuesOn(ctx context.Context, node int64) error {
	var state string
	err := s.sql.QueryRowContext(ctx, "SELECT state FROM db_nodes WHERE id = ? LOCK IN SHARE MODE", node).Scan(&state)
	if err != nil {
		return notFound(err, fmt.Sprintf("node %d", node))
	}
	if models.NodeState(state) != models.NodeReadWrite {
		return fmt.Errorf("node %d is %s: %w", node, state, models.ErrNoWritableNode)
	}
	return nil
}

// QueueSeal seals move m's old queue, on db node nodeID, for good: a BEFORE INSERT
// trigger that signals sealMessage, so no writer, however stale its topic, inserts
// into it again (its flush fails with models.ErrQueueSealed and it retries on the
// new slot table). CREATE TRIGGER takes the table's metadata lock exclusively, so it
// waits until every transaction that inserted into the queue ended (at most
// lockWait); a prepared XA branch whose session is gone holds no metadata lock
// (MariaDB), only its row locks, so the seal then waits until no prepared branch
// holds a row of the queue (awaitPrepared). After that,
// MAX(id) is final: that is the watermark, stored with the queue's state `sealed`. Sealing an already sealed queue only reads the watermark
// again, so an interrupted move is finished by calling it again.
func (s *Nodes) QueueSeal(ctx context.Context, m models.QueueMove, nodeID int64) (int64, error) {
	c, err := s.nodeConn(ctx, nodeID)
	if err != nil {
		return 0, err
	}
	table := models.QueueTableName(m.From)
	ddl := fmt.Sprintf("CREATE TRIGGER %s BEFORE INSERT ON %s FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '%s %d'",
		sealTrigger(m.From), table, sealMessage, m.From)
	var w int64
	run := func(ex conn) error {
		if _, err := ex.ExecContext(ctx, fmt.Sprintf("SET SESSION lock_wait_timeout = %d", int(lockWait/time.Second))); err != nil {
			return err
		}
		defer ex.ExecContext(context.WithoutCancel(ctx), "SET SESSION lock_wait_timeout = DEFAULT") //nolint:errcheck // the pool's next user gets the default either way
		if _, err := ex.ExecContext(ctx, ddl); err != nil && !triggerExists(err) {
			return fmt.Errorf("seal queue %d: %w", m.From, err)
		}
		if err := awaitPrepared(ctx, ex, table); err != nil {
			return fmt.Errorf("seal queue %d: %w", m.From, err)
		}
		return ex.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM "+table).Scan(&w)
	}
	if db, ok := c.(interface {
		Conn(context.Context) (*sql.Conn, error)
	}); ok {
		sc, err := db.Conn(ctx)
		if err != nil {
			return 0, fmt.Errorf("seal queue %d: %w", m.From, err)
		}
		defer func() { _ = sc.Close() }()
		err = run(sc)
		if err != nil {
			return 0, err
		}
	} else if err := run(c); err != nil {
		return 0, err
	}
	err = s.store().WithTx(ctx, func(tx *Store) error {
		if err := tx.db.Exec("UPDATE queue_moves SET watermark = ?, sealed_at = COALESCE(sealed_at, NOW(3)) WHERE id = ?", w, m.ID).Error; err != nil {
			return fmt.Errorf("store watermark of queue %d: %w", m.From, err)
		}
		return tx.db.Exec("UPDATE queues SET state = ? WHERE id = ?", string(models.QueueSealed), m.From).Error
	})
	return w, err
}

// awaitPrepared waits, when Herald has prepared XA branches on ex's server, until
// none of them holds a row of table: a locking read of every row waits for the
// row locks a prepared branch keeps (at most the session's
// innodb_lock_wait_timeout; the seal then fails and is tried again). Recovery
// commits a decided branch within seconds. With no prepared branch it reads
// nothing.
func awaitPrepared(ctx context.Context, ex conn, table string) error {
	xids, err := xaPrepared(ctx, ex)
	if err != nil || len(xids) == 0 {
		return err
	}
	var n int64
	if err := ex.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" FOR UPDATE").Scan(&n); err != nil {
		return fmt.Errorf("wait for prepared XA branches %v: %w", xids, err)
	}
	return nil
}

// lockWait bounds how long sealing waits for the queue's open inserts (their
// transactions hold its metadata lock): a flush takes milliseconds, so 30 s means
// something is stuck; the seal then fails and is tried again.
const lockWait = 30 * time.Second

// triggerExists reports whether err is CREATE TRIGGER finding the trigger there
// (ER_TRG_ALREADY_EXISTS, 1359): the queue is sealed already.
func triggerExists(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1359
}

// MoveOwed is what one group still owes a sealed queue: Remaining messages at most
// (the watermark minus its committed offset, plus the ids it lists as not done) and
// Retries, its retry rows on the queue.
type MoveOwed struct {
	GroupID   int64
	Group     string
	Committed int64
	Listed    int
	Remaining int64
	Retries   int64
}

// QueueMoveOwed returns, for move m, what every group with a cursor on its old queue
// still owes it, by group name (empty when no group holds a cursor there).
func (s *Nodes) QueueMoveOwed(ctx context.Context, m models.QueueMove) ([]MoveOwed, error) {
	rows, err := s.sql.QueryContext(ctx, `SELECT c.group_id, g.name, c.committed_offset, c.holes,
		(SELECT COUNT(*) FROM retry_messages r WHERE r.group_id = c.group_id AND r.queue_id = c.queue_id)
		FROM cursors c JOIN consumer_groups g ON g.id = c.group_id WHERE c.queue_id = ? ORDER BY g.name`, m.From)
	if err != nil {
		return nil, fmt.Errorf("read what groups owe queue %d: %w", m.From, err)
	}
	defer rows.Close()
	var out []MoveOwed
	for rows.Next() {
		var o MoveOwed
		var holes []byte
		if err := rows.Scan(&o.GroupID, &o.Group, &o.Committed, &holes, &o.Retries); err != nil {
			return nil, err
		}
		var hs []models.Hole
		_ = json.Unmarshal(holes, &hs)
		for _, h := range hs {
			o.Listed += int(h.To - h.From + 1)
		}
		if m.Watermark >= 0 {
			o.Remaining = max(m.Watermark-o.Committed, 0) + int64(o.Listed)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// QueueRetire retires move m's old queue when nothing is owed to it: the seal took
// hold, every cursor on it is at the watermark or beyond with no id listed, no
// retry row and no pending dead letter (redrive reads the body from the queue)
// references it, and no dead letter waits to be appended to a dead-letter topic
// from it. Then, in one transaction, its cursors are deleted, the queue is
// `retired` and the move marked retired; then its table is dropped on nodeID. It
// returns the groups whose cursors were deleted and whether it retired the queue.
func (s *Nodes) QueueRetire(ctx context.Context, m models.QueueMove, nodeID int64) (groups []int64, retired bool, err error) {
	if !m.Sealed() {
		return nil, false, nil
	}
	err = s.store().WithTx(ctx, func(tx *Store) error {
		var owed int64
		err := tx.sql.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM cursors WHERE queue_id = ? AND (committed_offset < ? OR holes <> '[]'))
			+ (SELECT COUNT(*) FROM retry_messages WHERE queue_id = ?)
			+ (SELECT COUNT(*) FROM dead_letters WHERE queue_id = ? AND (state = 'pending' OR dlq_offset IS NULL))`,
			m.From, m.Watermark, m.From, m.From).Scan(&owed)
		if err != nil {
			return fmt.Errorf("check what queue %d is owed: %w", m.From, err)
		}
		if owed > 0 {
			return nil
		}
		if err := tx.db.Raw("SELECT group_id FROM cursors WHERE queue_id = ? ORDER BY group_id FOR UPDATE", m.From).Scan(&groups).Error; err != nil {
			return fmt.Errorf("lock cursors of queue %d: %w", m.From, err)
		}
		for _, stmt := range []string{"DELETE FROM cursors WHERE queue_id = ?", "DELETE FROM retention_expired WHERE queue_id = ?"} {
			if err := tx.db.Exec(stmt, m.From).Error; err != nil {
				return fmt.Errorf("retire queue %d: %w", m.From, err)
			}
		}
		if err := tx.db.Exec("UPDATE queues SET state = ? WHERE id = ?", string(models.QueueRetired), m.From).Error; err != nil {
			return fmt.Errorf("retire queue %d: %w", m.From, err)
		}
		if err := tx.db.Exec("UPDATE queue_moves SET retired_at = NOW(3) WHERE id = ?", m.ID).Error; err != nil {
			return fmt.Errorf("retire move %d: %w", m.ID, err)
		}
		retired = true
		return nil
	})
	if err != nil || !retired {
		return nil, false, err
	}
	c, err := s.nodeConn(ctx, nodeID)
	if err != nil {
		return groups, true, err
	}
	if _, err := c.ExecContext(ctx, "DROP TABLE IF EXISTS "+models.QueueTableName(m.From)); err != nil {
		return groups, true, fmt.Errorf("drop queue table %d: %w", m.From, err)
	}
	return groups, true, nil
}

// TopicsOnNode returns the names of the topics with a live queue (not sealed or
// retired) on db node id, by name.
func (s *Nodes) TopicsOnNode(ctx context.Context, id int64) ([]string, error) {
	var names []string
	err := s.db.WithContext(ctx).Raw(`SELECT DISTINCT t.name FROM queues q JOIN topics t ON t.id = q.topic_id
		WHERE q.node_id = ? AND q.state IN ('read_write', 'read_only') ORDER BY t.name`, id).Scan(&names).Error
	if err != nil {
		return nil, fmt.Errorf("read topics on node %d: %w", id, err)
	}
	return names, nil
}

// PlaceTopicTarget returns the read-write node a moved topic goes to: the one
// models.PlaceQueues picks for one queue (all of a topic's queues live on one
// node). ErrNoWritableNode when none is read-write.
func (s *Nodes) PlaceTopicTarget(ctx context.Context) (int64, error) {
	var out int64
	err := s.store().WithTx(ctx, func(tx *Store) error {
		placed, err := tx.Nodes().placeQueues(ctx, 1)
		if err != nil {
			return err
		}
		out = placed[0]
		return nil
	})
	return out, err
}

// lockTopicForChange locks topic t's row (SELECT … FOR UPDATE) inside the control
// transaction tx, so moves and growth of one topic run one after the other, and
// refuses while a move of it is not retired. It returns the topic as read under the
// lock and the position after every one the topic ever had
// (retired queues' included), where new queues go. what, if not empty, names the
// refused change in the error. Errors: ErrTopicMoving, models.ErrNotFound when the
// topic was deleted, or the read's.
func (tx *Store) lockTopicForChange(ctx context.Context, t *models.Topic, what string) (*models.Topic, int, error) {
	var tr topicRow
	if err := tx.db.WithContext(ctx).Raw("SELECT * FROM topics WHERE id = ? FOR UPDATE", t.ID).Scan(&tr).Error; err != nil {
		return nil, 0, fmt.Errorf("lock topic %d: %w", t.ID, err)
	}
	if tr.ID == 0 {
		return nil, 0, fmt.Errorf("topic %s: %w", t.Name, models.ErrNotFound)
	}
	var moving int64
	if err := tx.sql.QueryRowContext(ctx, "SELECT COUNT(*) FROM queue_moves WHERE topic_id = ? AND retired_at IS NULL", t.ID).Scan(&moving); err != nil {
		return nil, 0, fmt.Errorf("read moves of topic %d: %w", t.ID, err)
	}
	if moving > 0 {
		return nil, 0, fmt.Errorf("topic %s: %s%w", t.Name, what, ErrTopicMoving)
	}
	var rows []queueRow
	if err := tx.db.WithContext(ctx).Where("topic_id = ?", t.ID).Order("position").Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("read queues of %s: %w", t.Name, err)
	}
	next := 0
	for _, q := range rows {
		next = max(next, q.Position+1)
	}
	return toTopic(tr, rows), next, nil
}
