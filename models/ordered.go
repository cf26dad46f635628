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
