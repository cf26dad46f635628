package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
)

type topicRow struct {
	ID              int64 `gorm:"primaryKey"`
	Name            string
	NodeID          int64
	KeySlots        *string // JSON array of models.KeySlots queue ids (migration 000007)
	RetentionHours  int
	RetentionPolicy string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

func (topicRow) TableName() string { return "topics" }

type queueRow struct {
	ID        int64 `gorm:"primaryKey"`
	TopicID   int64
	NodeID    int64
	Position  int
	State     string
	CreatedAt time.Time
}

func (queueRow) TableName() string { return "queues" }

// queueTableCreate creates queue q's table on its node.
func (s *Store) queueTableCreate(ctx context.Context, q queueRow) error {
	c, err := s.Nodes().nodeConn(ctx, q.NodeID)
	if err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, models.QueueTableDDL(models.QueueTableName(q.ID)))
	return err
}

// queueTableDrop drops queue q's table on node (its queues row may be gone).
func (s *Store) queueTableDrop(ctx context.Context, q, node int64) error {
	c, err := s.Nodes().nodeConn(ctx, node)
	if err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, "DROP TABLE IF EXISTS "+models.QueueTableName(q))
	return err
}

// TopicCreate creates topic name with n queues, each with its queue table, placed on
// read-write db nodes by models.PlaceQueues (ErrNoWritableNode when there is none).
// It returns ErrConflict when the name is taken and ErrInvalid for a bad name, a
// reserved `.dlq` name or n outside [1, MaxQueuesPerTopic].
func (s *Store) TopicCreate(ctx context.Context, name string, n int) (*models.Topic, error) {
	return s.topicCreate(ctx, name, n, false)
}

// TopicCreateReserved is TopicCreate for Herald's own dead-letter topics, which may
// end with `.dlq`.
func (s *Store) TopicCreateReserved(ctx context.Context, name string, n int) (*models.Topic, error) {
	return s.topicCreate(ctx, name, n, true)
}

func (s *Store) topicCreate(ctx context.Context, name string, n int, reserved bool) (*models.Topic, error) {
	var v models.ValidationError
	if !models.ValidName(name) {
		v.Add("/name", "must match ^[a-z0-9][a-z0-9._-]{0,119}$")
	} else if models.ReservedName(name) && !reserved {
		v.Add("/name", "the .dlq suffix is reserved for dead-letter topics; subscribing a group to <group>.dlq creates it")
	} else if name == models.EventsTopic && !reserved {
		v.Add("/name", models.EventsTopic+" is reserved for Herald's operational events")
	}
	if n < 1 || n > models.MaxQueuesPerTopic {
		v.Add("/queues", fmt.Sprintf("must be between 1 and %d", models.MaxQueuesPerTopic))
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	tr := topicRow{Name: name, NodeID: models.PrimaryNodeID, RetentionHours: models.DefaultRetentionHours, RetentionPolicy: string(models.RetentionConsumed), CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
	var qs []queueRow
	err := s.WithTx(ctx, func(tx *Store) error {
		if err := tx.db.Create(&tr).Error; err != nil {
			if isDuplicate(err) {
				return fmt.Errorf("topic %q: %w", name, models.ErrConflict)
			}
			return fmt.Errorf("insert topic: %w", err)
		}
		placed, err := tx.Nodes().placeQueues(ctx, n)
		if err != nil {
			return err
		}
		qs = make([]queueRow, n)
		for i := range qs {
			qs[i] = queueRow{TopicID: tr.ID, NodeID: placed[i], Position: i, State: string(models.QueueReadWrite), CreatedAt: tr.CreatedAt}
		}
		if err := tx.db.Create(&qs).Error; err != nil {
			return fmt.Errorf("insert queues: %w", err)
		}
		slots := encodeSlots(models.InitialSlots(toTopic(tr, qs).Queues))
		tr.KeySlots = &slots
		if err := tx.db.Model(&topicRow{}).Where("id = ?", tr.ID).Update("key_slots", slots).Error; err != nil {
			return fmt.Errorf("write key slots: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.npool.remember(qs)
	for i, q := range qs {
		if err := s.queueTableCreate(ctx, q); err != nil {
			for _, made := range qs[:i] {
				_ = s.queueTableDrop(ctx, made.ID, made.NodeID)
			}
			s.db.WithContext(ctx).Where("topic_id = ?", tr.ID).Delete(&queueRow{})
			s.db.WithContext(ctx).Delete(&tr)
			return nil, fmt.Errorf("create queue table %d: %w", q.ID, err)
		}
	}
	return toTopic(tr, qs), nil
}

func toTopic(tr topicRow, qs []queueRow) *models.Topic {
	t := &models.Topic{ID: tr.ID, Name: tr.Name, NodeID: tr.NodeID, RetentionHours: tr.RetentionHours,
		RetentionPolicy: models.RetentionPolicy(tr.RetentionPolicy), CreatedAt: tr.CreatedAt}
	for _, q := range qs {
		if q.State == string(models.QueueRetired) {
			continue // its table is dropped; the row only keeps its id from reuse
		}
		t.Queues = append(t.Queues, models.Queue{ID: q.ID, TopicID: q.TopicID, NodeID: q.NodeID, Position: q.Position, State: models.QueueState(q.State)})
	}
	if tr.KeySlots != nil {
		var slots []int64
		if json.Unmarshal([]byte(*tr.KeySlots), &slots) == nil && len(slots) == models.KeySlots {
			t.Slots = slots
		}
	}
	return t
}

// TopicGetByName returns the topic with its queues ordered by position, or ErrNotFound
// (also, without a query, for a name models.PossibleName refuses).
func (s *Store) TopicGetByName(ctx context.Context, name string) (*models.Topic, error) {
	if !models.PossibleName(name) {
		return nil, fmt.Errorf("topic %q: %w", name, models.ErrNotFound)
	}
	var tr topicRow
	if err := s.db.WithContext(ctx).Where("name = ?", name).Take(&tr).Error; err != nil {
		return nil, notFound(err, "topic "+name)
	}
	var qs []queueRow
	if err := s.db.WithContext(ctx).Where("topic_id = ?", tr.ID).Order("position").Find(&qs).Error; err != nil {
		return nil, fmt.Errorf("read queues of %s: %w", name, err)
	}
	return toTopic(tr, qs), nil
}

// TopicGetByID returns topic id with its queues in position order, or
// models.ErrNotFound.
func (s *Store) TopicGetByID(ctx context.Context, id int64) (*models.Topic, error) {
	var tr topicRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&tr).Error; err != nil {
		return nil, notFound(err, fmt.Sprintf("topic %d", id))
	}
	var qs []queueRow
	if err := s.db.WithContext(ctx).Where("topic_id = ?", tr.ID).Order("position").Find(&qs).Error; err != nil {
		return nil, fmt.Errorf("read queues of %s: %w", tr.Name, err)
	}
	return toTopic(tr, qs), nil
}

// TopicNamesExisting returns which of names are topics now, in one statement on the
// control database.
func (s *Store) TopicNamesExisting(ctx context.Context, names []string) (map[string]bool, error) {
	out := make(map[string]bool, len(names))
	if len(names) == 0 {
		return out, nil
	}
	var found []string
	if err := s.db.WithContext(ctx).Model(&topicRow{}).Where("name IN ?", names).Pluck("name", &found).Error; err != nil {
		return nil, fmt.Errorf("look up topic names: %w", err)
	}
	for _, n := range found {
		out[n] = true
	}
	return out, nil
}

// TopicList returns up to limit topics with id > after, ordered by id, with their queues.
func (s *Store) TopicList(ctx context.Context, after int64, limit int) ([]*models.Topic, error) {
	var trs []topicRow
	if err := s.db.WithContext(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&trs).Error; err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	out := make([]*models.Topic, 0, len(trs))
	if len(trs) == 0 {
		return out, nil
	}
	ids := make([]int64, len(trs))
	for i, t := range trs {
		ids[i] = t.ID
	}
	var qs []queueRow
	if err := s.db.WithContext(ctx).Where("topic_id IN ?", ids).Order("topic_id, position").Find(&qs).Error; err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	byTopic := map[int64][]queueRow{}
	for _, q := range qs {
		byTopic[q.TopicID] = append(byTopic[q.TopicID], q)
	}
	for _, t := range trs {
		out = append(out, toTopic(t, byTopic[t.ID]))
	}
	return out, nil
}

// QueueTopics maps every queue id to its topic name, for workers' herald-topic header.
func (s *Store) QueueTopics(ctx context.Context) (map[int64]string, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT q.id, t.name FROM queues q JOIN topics t ON t.id = q.topic_id")
	if err != nil {
		return nil, fmt.Errorf("read queue topics: %w", err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		out[id] = name
	}
	return out, rows.Err()
}

// QueueTopicIDs maps every queue id to its topic id.
func (s *Store) QueueTopicIDs(ctx context.Context) (map[int64]int64, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT id, topic_id FROM queues")
	if err != nil {
		return nil, fmt.Errorf("read queue topics: %w", err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var q, t int64
		if err := rows.Scan(&q, &t); err != nil {
			return nil, err
		}
		out[q] = t
	}
	return out, rows.Err()
}

// QueueSetState makes a queue read-write or read-only (PMQ's queue states).
func (s *Store) QueueSetState(ctx context.Context, queueID int64, st models.QueueState) error {
	_, err := s.sql.ExecContext(ctx, "UPDATE queues SET state = ? WHERE id = ?", string(st), queueID)
	if err != nil {
		return fmt.Errorf("set queue %d state: %w", queueID, err)
	}
	return nil
}

// QueueOffsets is the id range a queue holds now: Min and Max offset (both 0 when
// the queue is empty). Max minus Min plus one bounds its row count (ids have holes).
type QueueOffsets struct {
	Min, Max int64
}

// QueueOffsetRanges returns MIN(id) and MAX(id) of each listed queue in one
// statement per 200 queues (primary-key reads, cheap at any size). The queues of a
// db node other than 1 that does not answer, or is marked down, are left out of
// the map (NodeOutage marks it).
func (s *Store) QueueOffsetRanges(ctx context.Context, queueIDs []int64) (map[int64]QueueOffsets, error) {
	out := make(map[int64]QueueOffsets, len(queueIDs))
	nodes, byNode, err := s.Nodes().byNode(ctx, queueIDs)
	if err != nil {
		return nil, fmt.Errorf("read queue offsets: %w", err)
	}
	for _, n := range nodes {
		if s.Nodes().skipNode(n) {
			continue // a down node's queues are left out; the caller shows NodesDown
		}
		nctx, cancel := s.Nodes().NodeContext(ctx, n)
		err := s.queueOffsetRangesOn(nctx, n, byNode[n], out)
		cancel()
		if s.Nodes().NodeOutage(n, err) {
			continue
		}
		if isNoTable(err) {
			// A move's old queue retired (its table dropped) after the caller read
			// the topic: it reads as empty, the others again.
			var live []int64
			if live, err = s.queuesNotRetired(ctx, byNode[n]); err == nil {
				err = s.queueOffsetRangesOn(ctx, n, live, out)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// queuesNotRetired returns the listed queues that are not retired, in order.
func (s *Store) queuesNotRetired(ctx context.Context, queueIDs []int64) ([]int64, error) {
	var retired []int64
	if err := s.db.WithContext(ctx).Raw("SELECT id FROM queues WHERE id IN ? AND state = ?", queueIDs, string(models.QueueRetired)).Scan(&retired).Error; err != nil {
		return nil, fmt.Errorf("read states of queues: %w", err)
	}
	out := make([]int64, 0, len(queueIDs))
	for _, q := range queueIDs {
		if !slices.Contains(retired, q) {
			out = append(out, q)
		}
	}
	return out, nil
}

func (s *Store) queueOffsetRangesOn(ctx context.Context, node int64, queueIDs []int64, out map[int64]QueueOffsets) error {
	if len(queueIDs) == 0 {
		return nil
	}
	c, err := s.Nodes().nodeConn(ctx, node)
	if err != nil {
		return fmt.Errorf("read queue offsets on node %d: %w", node, err)
	}
	for start := 0; start < len(queueIDs); start += 200 {
		end := min(start+200, len(queueIDs))
		parts := make([]string, 0, end-start)
		for _, q := range queueIDs[start:end] {
			parts = append(parts, fmt.Sprintf("SELECT %d, COALESCE(MIN(id), 0), COALESCE(MAX(id), 0) FROM %s", q, models.QueueTableName(q)))
		}
		rows, err := c.QueryContext(ctx, strings.Join(parts, " UNION ALL "))
		if err != nil {
			return fmt.Errorf("read queue offsets on node %d: %w", node, err)
		}
		for rows.Next() {
			var q int64
			var o QueueOffsets
			if err := rows.Scan(&q, &o.Min, &o.Max); err != nil {
				rows.Close()
				return err
			}
			out[q] = o
		}
		rows.Close()
	}
	return nil
}

// TopicSubscribers returns the names of the groups subscribed to topic id, by name.
func (s *Store) TopicSubscribers(ctx context.Context, topicID int64) ([]string, error) {
	var names []string
	err := s.db.WithContext(ctx).Raw("SELECT g.name FROM subscriptions s JOIN consumer_groups g ON g.id = s.group_id WHERE s.topic_id = ? ORDER BY g.name", topicID).Scan(&names).Error
	if err != nil {
		return nil, fmt.Errorf("read subscribers of topic %d: %w", topicID, err)
	}
	return names, nil
}

// TopicSubscriberIDs returns the ids of the groups subscribed to topic id, in id
// order.
func (s *Store) TopicSubscriberIDs(ctx context.Context, topicID int64) ([]int64, error) {
	var ids []int64
	err := s.db.WithContext(ctx).Raw("SELECT group_id FROM subscriptions WHERE topic_id = ? ORDER BY group_id", topicID).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("read subscribers of topic %d: %w", topicID, err)
	}
	return ids, nil
}

// TopicDelete removes a topic, its queues and their tables. While groups subscribe
// to it, it refuses with an error wrapping models.ErrInUse that names them and
// changes nothing, unless force is set: then it first removes those subscriptions
// with the groups' cursors and retry rows on its queues (bumping each group's
// config_version), and returns the names of the groups that lost them. ErrNotFound
// for an unknown name. Dropping the tables deletes the messages, and the topic's schedules and parked
// (delayed) messages go too: it cannot be undone.
func (s *Store) TopicDelete(ctx context.Context, name string, force bool) (unsubscribed []string, err error) {
	t, err := s.TopicGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	qids := make([]int64, len(t.Queues))
	for i, q := range t.Queues {
		qids[i] = q.ID
	}
	err = s.WithTx(ctx, func(tx *Store) error {
		if err := tx.db.Raw("SELECT id FROM topics WHERE id = ? FOR UPDATE", t.ID).Scan(new(int64)).Error; err != nil {
			return fmt.Errorf("lock topic: %w", err)
		}
		subs, err := tx.TopicSubscribers(ctx, t.ID)
		if err != nil {
			return err
		}
		if len(subs) > 0 && !force {
			return &InUseError{What: "topic " + name, By: subs}
		}
		unsubscribed = subs
		if len(subs) > 0 {
			err := tx.db.Exec(`UPDATE consumer_groups SET config_version = config_version + 1, updated_at = NOW(3)
				WHERE id IN (SELECT group_id FROM subscriptions WHERE topic_id = ?)`, t.ID).Error
			if err != nil {
				return fmt.Errorf("touch subscribed groups: %w", err)
			}
			if err := tx.db.Exec("DELETE FROM subscriptions WHERE topic_id = ?", t.ID).Error; err != nil {
				return fmt.Errorf("delete subscriptions: %w", err)
			}
		}
		if len(qids) > 0 {
			for _, stmt := range []string{"DELETE FROM cursors WHERE queue_id IN ?", "DELETE FROM retry_messages WHERE queue_id IN ?", "DELETE FROM retention_expired WHERE queue_id IN ?"} {
				if err := tx.db.Exec(stmt, qids).Error; err != nil {
					return fmt.Errorf("delete rows of the topic's queues: %w", err)
				}
			}
		}
		if err := tx.db.Exec("DELETE FROM queue_moves WHERE topic_id = ?", t.ID).Error; err != nil {
			return fmt.Errorf("delete queue moves: %w", err)
		}
		// Its schedules and the messages parked for it (delayed, or a schedule's
		// tick) go with it: nothing can deliver them any more.
		for _, stmt := range []string{"DELETE FROM schedules WHERE topic_id = ?", "DELETE FROM delayed_messages WHERE topic_id = ?"} {
			if err := tx.db.Exec(stmt, t.ID).Error; err != nil {
				return fmt.Errorf("delete the topic's schedules and parked messages: %w", err)
			}
		}
		if err := tx.db.Exec("DELETE FROM queues WHERE topic_id = ?", t.ID).Error; err != nil {
			return fmt.Errorf("delete queues: %w", err)
		}
		if err := tx.db.Exec("DELETE FROM topics WHERE id = ?", t.ID).Error; err != nil {
			return fmt.Errorf("delete topic: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, q := range t.Queues {
		if err := s.queueTableDrop(ctx, q.ID, q.NodeID); err != nil {
			return unsubscribed, fmt.Errorf("drop queue table %d: %w", q.ID, err)
		}
	}
	_, _ = s.sql.ExecContext(ctx, "DELETE FROM stats_minutely WHERE group_id = 0 AND topic_id = ?", t.ID)
	return unsubscribed, nil
}

// InUseError is a removal refused because others still reference the resource:
// What names it ("topic orders") and By the referencing groups, by name. It matches
// models.ErrInUse.
type InUseError struct {
	What string
	By   []string
}

// Error is e.g. "topic orders has subscribers (billing, crm): still in use".
func (e *InUseError) Error() string {
	return fmt.Sprintf("%s has subscribers (%s): %v", e.What, strings.Join(e.By, ", "), models.ErrInUse)
}

// Unwrap returns models.ErrInUse.
func (e *InUseError) Unwrap() error { return models.ErrInUse }

// TopicSetRetention sets topic id's retention: hours (1 to models.MaxRetentionHours)
// and policy. Errors: a *models.ValidationError, ErrNotFound.
func (s *Store) TopicSetRetention(ctx context.Context, id int64, hours int, policy models.RetentionPolicy) error {
	var v models.ValidationError
	if hours < 1 || hours > models.MaxRetentionHours {
		v.Add("/retention_hours", fmt.Sprintf("must be between 1 and %d", models.MaxRetentionHours))
	}
	if !slices.Contains(models.RetentionPolicies(), policy) {
		v.Add("/retention_policy", "must be consumed or strict")
	}
	if err := v.Err(); err != nil {
		return err
	}
	res := s.db.WithContext(ctx).Model(&topicRow{}).Where("id = ?", id).Updates(map[string]any{
		"retention_hours": hours, "retention_policy": string(policy), "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return fmt.Errorf("set retention of topic %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("topic %d: %w", id, models.ErrNotFound)
	}
	return nil
}

// TopicAddQueues grows topic t to n live queues (read-write or read-only): new
// queue rows and tables, and a cursor at offset 0 on each new queue for every
// subscribed group (whatever their consume_from). No key slot moves: a topic
// without a slot table gets one frozen from its current queues first, so every key
// stays on its queue and per-key order holds across growth; the new queues take
// keyless messages only. It is one transaction on the control database that first
// locks the topic's row (FOR UPDATE) and reads the topic again under that lock, as
// TopicMoveBegin does: growth and a move of one topic are serialised, so a move
// that waited sees the grown queue set and moves it, and a growth that waited
// finds the move and is refused. The new tables are created on each node's own
// pool, outside the transaction (DDL on node 1 would commit it), and dropped again
// if the transaction rolls back. On success t becomes the topic as grown (queues
// and slot table as read under the lock). Errors: ErrTopicMoving while a move's
// old queue is not retired, models.ErrNotFound when the topic was deleted, a
// *ValidationError when n is below the current live count or above
// MaxQueuesPerTopic, ErrNoWritableNode or ErrQueueUnavailable from placement.
func (s *Store) TopicAddQueues(ctx context.Context, t *models.Topic, n int) error {
	if n > models.MaxQueuesPerTopic {
		return growthRange(len(t.Queues))
	}
	var grown *models.Topic
	var added []queueRow
	err := s.WithTx(ctx, func(tx *Store) error {
		added = nil
		var next int
		var err error
		grown, next, err = tx.lockTopicForChange(ctx, t, "growth waits until its move is retired: ")
		if err != nil {
			return err
		}
		have := len(grown.Queues) // no move is unretired: every queue listed is live
		if n < have {
			return growthRange(have)
		}
		if n == have {
			return nil
		}
		if len(grown.Slots) != models.KeySlots {
			grown.Slots = models.InitialSlots(grown.Queues)
			if err := tx.db.Exec("UPDATE topics SET key_slots = ?, updated_at = NOW(3) WHERE id = ?", encodeSlots(grown.Slots), t.ID).Error; err != nil {
				return fmt.Errorf("freeze key slots of topic %d: %w", t.ID, err)
			}
		}
		placed, err := tx.Nodes().placeQueues(ctx, n-have)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		rowsAdded := make([]queueRow, len(placed))
		for i, node := range placed {
			rowsAdded[i] = queueRow{TopicID: t.ID, NodeID: node, Position: next + i, State: string(models.QueueReadWrite), CreatedAt: now}
		}
		if err := tx.db.Create(&rowsAdded).Error; err != nil {
			return fmt.Errorf("insert queues: %w", err)
		}
		for _, q := range rowsAdded {
			// The node's own pool (s, not tx): DDL on node 1 would commit the transaction.
			if err := s.queueTableCreate(ctx, q); err != nil {
				return fmt.Errorf("create queue table %d: %w", q.ID, err)
			}
			added = append(added, q)
			err := tx.db.Exec(`INSERT INTO cursors (group_id, queue_id, committed_offset, holes, version, owner, updated_at)
				SELECT group_id, ?, 0, '[]', 1, '', NOW(3) FROM subscriptions WHERE topic_id = ?`, q.ID, t.ID).Error
			if err != nil {
				return fmt.Errorf("insert cursors of queue %d: %w", q.ID, err)
			}
			grown.Queues = append(grown.Queues, models.Queue{ID: q.ID, TopicID: t.ID, NodeID: q.NodeID, Position: q.Position, State: models.QueueReadWrite})
		}
		return nil
	})
	if err != nil {
		for _, q := range added {
			// Their rows were rolled back; a table left behind holds nothing.
			if derr := s.queueTableDrop(context.WithoutCancel(ctx), q.ID, q.NodeID); derr != nil {
				err = fmt.Errorf("%w (and drop queue table %d: %v)", err, q.ID, derr)
			}
		}
		return err
	}
	s.npool.remember(added)
	t.Queues, t.Slots = grown.Queues, grown.Slots
	return nil
}

// growthRange is the ValidationError of a queue count outside have..MaxQueuesPerTopic.
func growthRange(have int) error {
	return &models.ValidationError{Errors: []models.FieldError{{Pointer: "/queues",
		Detail: fmt.Sprintf("must be between the current %d and %d (queues are never removed)", have, models.MaxQueuesPerTopic)}}}
}

// QueuesSetReadOnly makes exactly the listed queues of topic t read-only and the rest
// read-write (a read-only queue takes no publishes and drains, PMQ). It returns a
// *ValidationError naming a queue that is not t's, or when no queue would stay writable.
func (s *Store) QueuesSetReadOnly(ctx context.Context, t *models.Topic, readOnly []int64) error {
	var v models.ValidationError
	for i, id := range readOnly {
		if !slices.ContainsFunc(t.Queues, func(q models.Queue) bool { return q.ID == id }) {
			v.Add(fmt.Sprintf("/read_only_queues/%d", i), fmt.Sprintf("queue %d is not one of this topic's", id))
		}
	}
	if len(v.Errors) == 0 && len(t.Queues) > 0 && countDistinct(readOnly) >= len(t.Queues) {
		v.Add("/read_only_queues", "at least one queue must stay writable")
	}
	if err := v.Err(); err != nil {
		return err
	}
	for i, q := range t.Queues {
		if q.State == models.QueueSealing || q.State == models.QueueSealed {
			continue // a move's old queue: sealed for good
		}
		st := models.QueueReadWrite
		if slices.Contains(readOnly, q.ID) {
			st = models.QueueReadOnly
		}
		if err := s.db.WithContext(ctx).Model(&queueRow{}).Where("id = ?", q.ID).Update("state", string(st)).Error; err != nil {
			return fmt.Errorf("set queue %d state: %w", q.ID, err)
		}
		t.Queues[i].State = st
	}
	return nil
}

func countDistinct(ids []int64) int {
	c := slices.Clone(ids)
	slices.Sort(c)
	return len(slices.Compact(c))
}

// TopicCount returns how many topics exist, dead-letter topics included.
func (s *Store) TopicCount(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&topicRow{}).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count topics: %w", err)
	}
	return n, nil
}

// encodeSlots renders a slot table as its JSON column value.
func encodeSlots(slots []int64) string {
	b, _ := json.Marshal(slots)
	return string(b)
}
