package models

import (
	"fmt"
	"hash/fnv"
	"time"
)

// QueueState says whether a queue takes writes. A read-only queue keeps delivering
// its backlog and can then be retired (PMQ's queue read/write states).
type QueueState string

const (
	// QueueReadWrite takes publishes and is read by dispatchers.
	QueueReadWrite QueueState = "read_write"
	// QueueReadOnly takes no publishes; dispatchers drain it.
	QueueReadOnly QueueState = "read_only"
	// QueueSealing is a queue a move is sealing: no fresh writer picks it, and a
	// stale writer's rows land below the watermark the seal takes (QueueMove).
	QueueSealing QueueState = "sealing"
	// QueueSealed refuses every insert in the database itself (a BEFORE INSERT
	// trigger), so its MAX(id) at seal time is final; groups drain it.
	QueueSealed QueueState = "sealed"
	// QueueRetired is a sealed queue every group drained: its cursors are deleted
	// and its table dropped; the row stays so its id is never reused.
	QueueRetired QueueState = "retired"
)

// MaxQueuesPerTopic caps the queue count given when a topic is created.
const MaxQueuesPerTopic = 64

// Topic is a named stream publishers write to. NodeID is PrimaryNodeID (PMQ's
// topics.node_id); each of its Queues names the db node it is placed on.
// RetentionHours (default DefaultRetentionHours) is how long its messages are kept
// and RetentionPolicy (default RetentionConsumed) whether a lagging group holds
// older ones back.
type Topic struct {
	ID     int64
	Name   string
	NodeID int64
	Queues []Queue
	// Slots maps each of the KeySlots key slots to a queue id (a topic's key
	// placement, PMQ-style metadata); nil for a topic created before slot tables,
	// whose keys map to queue position slot % len(Queues) until it first grows.
	Slots           []int64
	RetentionHours  int
	RetentionPolicy RetentionPolicy
	CreatedAt       time.Time
}

// SlotQueue returns the queue keyed messages of slot go to, and false when the slot
// table names a queue the topic does not have.
func (t *Topic) SlotQueue(slot int) (Queue, bool) {
	if len(t.Slots) != KeySlots {
		return t.Queues[slot%len(t.Queues)], true
	}
	id := t.Slots[slot%KeySlots]
	for _, q := range t.Queues {
		if q.ID == id {
			return q, true
		}
	}
	return Queue{}, false
}

// KeySlot returns the key slot of key: fnv32a(key) % KeySlots.
func KeySlot(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % KeySlots)
}

// QueueForKey returns the queue messages with key go to: the queue the slot table
// names for KeySlot(key) (slot % len(Queues) by position for a topic without one).
// It returns false when the table names a queue the topic does not have. A key never
// fails over to another queue, so per-key order holds; the caller checks the
// queue's State.
func (t *Topic) QueueForKey(key string) (Queue, bool) { return t.SlotQueue(KeySlot(key)) }

// InitialSlots returns the slot table of queues (ordered by position) as keys mapped
// before slot tables existed: slot i to queue i % len(queues).
func InitialSlots(queues []Queue) []int64 {
	out := make([]int64, KeySlots)
	for i := range out {
		out[i] = queues[i%len(queues)].ID
	}
	return out
}

// Queue is one partition of a topic, stored as one MySQL table named by its ID
// only (see QueueTableName). IDs are never reused, so `msg_<queue>_<offset>`
// names one message for the life of an installation.
type Queue struct {
	ID       int64
	TopicID  int64
	NodeID   int64
	Position int // 0-based index within the topic, used for key slots
	State    QueueState
}

// queueDDL is the one fixed shape of every queue table (no user string in SQL). Tag
// and key are VARBINARY so they are stored byte-exact; created_at is Unix ms.
const queueDDL = `CREATE TABLE IF NOT EXISTS %s (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  tag VARBINARY(255) NOT NULL DEFAULT '',
  msg_key VARBINARY(255) NOT NULL DEFAULT '',
  headers JSON NULL,
  body LONGBLOB NOT NULL,
  content_type VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  trace_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  producer_ip VARCHAR(45) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  KEY idx_created_at (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`

// QueueTableDDL returns the CREATE TABLE IF NOT EXISTS statement of a queue table
// named table (QueueTableName for Herald's own; the benchmark's stand-in uses the
// same shape under its own names).
func QueueTableDDL(table string) string { return fmt.Sprintf(queueDDL, table) }

// QueueTableName returns the table holding queue id: "queue_" and the id in at
// least six digits. No user string ever reaches a table name.
func QueueTableName(id int64) string {
	s := itoa(int(id))
	for len(s) < 6 {
		s = "0" + s
	}
	return "queue_" + s
}

// KeySlots is the fixed number of key slots; a keyed message goes to slot
// fnv32a(key) % KeySlots and the topic's slot table (Topic.Slots) names its queue.
// Growing a topic moves no slot: new queues take keyless messages only.
const KeySlots = 1024
