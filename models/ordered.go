package models

import "time"

// OnExhausted is what an ordered group does when a queue's head message has failed
// max_attempts times in place.
type OnExhausted string

const (
	// OnExhaustedDeadLetter makes the first failed message a dead letter and moves the
	// queue on (default).
	OnExhaustedDeadLetter OnExhausted = "dead_letter"
	// OnExhaustedPause stops the queue on that message until an operator resumes it
	// (new attempts) or skips it (it becomes a dead letter).
	OnExhaustedPause OnExhausted = "pause"
)

// OnExhaustedValues lists every OnExhausted.
func OnExhaustedValues() []OnExhausted {
	return []OnExhausted{OnExhaustedDeadLetter, OnExhaustedPause}
}

// OrderedBlock is a queue of an ordered group stopped on its head: Count messages
// from Offset (one POST's worth) failed Attempts times and are sent again, the same
// messages under the same webhook-id, at NextAt; nothing later in the queue is sent
// meanwhile. Paused means attempts are exhausted and it waits for an operator
// (NextAt is then zero). Action is an operator's request not yet applied by the
// cursor's owner: OrderedActionSkip or OrderedActionResume.
type OrderedBlock struct {
	GroupID   int64
	QueueID   int64
	Offset    int64
	Count     int
	Attempts  int
	NextAt    time.Time
	Paused    bool
	LastError string
	Action    string
	UpdatedAt time.Time
}

// Operator actions on a blocked ordered queue.
const (
	// OrderedActionSkip dead-letters the blocked messages and moves the queue on.
	OrderedActionSkip = "skip"
	// OrderedActionResume sends the blocked messages again now, with a fresh count
	// of attempts.
	OrderedActionResume = "resume"
)

// Ordering is an ordered group's unit of order (migration 000013).
type Ordering string

const (
	// OrderingKey orders per message key (SQS FIFO's message group, Pub/Sub's
	// ordering key): a message is sent only once every earlier message of its key
	// in its queue was acknowledged, dead-lettered or skipped; keys of one queue flow
	// in parallel up to max_in_flight, each key one POST at a time, and a failure
	// blocks only its key. Keyless messages are unordered. Default for new ordered
	// groups.
	OrderingKey Ordering = "key"
	// OrderingQueue orders per queue (RocketMQ's orderly consumption): one POST per
	// queue at a time, in offset order; a failure blocks its whole queue. Groups
	// ordered before ordering existed keep it.
	OrderingQueue Ordering = "queue"
)

// OrderingValues lists every Ordering.
func OrderingValues() []Ordering {
	return []Ordering{OrderingKey, OrderingQueue}
}

// OrderedByKey reports whether g orders per key (ordered, ordering key).
func (g *Group) OrderedByKey() bool {
	return g.Ordered && g.Ordering == OrderingKey
}

// OrderedKeyBlock is a key of a group ordered by key stopped on its head message:
// Count messages of the key from Offset (those its failed POST carried) failed
// Attempts times and go again at NextAt; later messages of the key wait meanwhile,
// other keys do not. Paused means attempts are exhausted and it waits for an
// operator (NextAt is then zero). Action is an operator's request the cursor's
// owner has not applied yet (OrderedActionSkip or OrderedActionResume).
type OrderedKeyBlock struct {
	GroupID   int64
	QueueID   int64
	Key       string
	Offset    int64
	Count     int
	Attempts  int
	NextAt    time.Time
	Paused    bool
	LastError string
	Action    string
	UpdatedAt time.Time
}
