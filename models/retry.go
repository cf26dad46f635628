package models

import (
	"math/rand/v2"
	"time"
)

// DeadLetterState is a dead letter's lifecycle state.
type DeadLetterState string

const (
	// DeadLetterPending awaits an operator: redrive or purge.
	DeadLetterPending DeadLetterState = "pending"
	// DeadLetterRedriven was moved back to the retry topic (attempt 1).
	DeadLetterRedriven DeadLetterState = "redriven"
	// DeadLetterPurged was discarded by an operator.
	DeadLetterPurged DeadLetterState = "purged"
)

// DeadLetterStates lists every DeadLetterState.
func DeadLetterStates() []DeadLetterState {
	return []DeadLetterState{DeadLetterPending, DeadLetterRedriven, DeadLetterPurged}
}

// RetryDelay returns how long to wait before attempt next (2, 3, …) under schedule
// (seconds; the last entry repeats), with ±20 % jitter, as Standard Webhooks
// recommends. An empty schedule uses DefaultRetrySchedule.
func RetryDelay(schedule []int, next int) time.Duration {
	if len(schedule) == 0 {
		schedule = DefaultRetrySchedule
	}
	i := min(max(next-2, 0), len(schedule)-1)
	base := time.Duration(schedule[i]) * time.Second
	jitter := (rand.Float64()*0.4 - 0.2) * float64(base)
	return base + time.Duration(jitter)
}

// RetryMessage is a message waiting in a group's retry topic: a reference to its
// queue row, the attempt to make next and when.
type RetryMessage struct {
	GroupID    int64
	QueueID    int64
	Offset     int64
	Attempt    int
	DueAt      time.Time
	LastStatus int
	LastError  string
	// FailedAt is when the POST that failed it was recorded (ms precision): rows of one
	// failed POST share it, so a retry re-sends them as that batch.
	FailedAt time.Time
}

// DeadLetter is a message that exhausted its attempts for one group.
type DeadLetter struct {
	ID         int64
	GroupID    int64
	QueueID    int64
	Offset     int64
	Attempts   int
	LastStatus int
	LastError  string
	State      DeadLetterState
	DLQQueueID *int64
	DLQOffset  *int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// DeliveryAttempt is one POST's outcome for one message. Status is the HTTP status
// (0 when none); ErrorClass names a failure (dns, connect, tls, timeout, reset,
// redirect, blocked_destination, http_status); LatencyMS in milliseconds; Excerpt
// is the start of a non-2xx response body.
type DeliveryAttempt struct {
	GroupID    int64
	QueueID    int64
	Offset     int64
	WebhookID  string
	Attempt    int
	Status     int
	ErrorClass string
	LatencyMS  int
	Excerpt    []byte
	CreatedAt  time.Time
}
