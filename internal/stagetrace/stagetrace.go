// Package stagetrace records when the delivery path passes each of its stages (publish
// handler, group-commit flush, commit, notification, dispatch, job hand-off, POST), so
// a benchmark can break one message's publish-to-receipt time down from timestamps.
// It is off unless Enable was called (HERALD_STAGE_TRACE): then Mark costs one atomic
// load and a predicted branch. Each mark names its message by queue and offset, so
// messages in a crowd are broken down as well as a lone one.
package stagetrace

import (
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Stage is one point of the delivery path, in the order a message passes them.
type Stage uint8

// The stages a message passes, in path order.
const (
	// PublishStart is the publish handler's entry (after routing and authentication).
	PublishStart Stage = iota + 1
	// PublishSubmit is the handler handing its request to the group-commit writer.
	PublishSubmit
	// FlushStart is a writer lane taking the first request of a flush.
	FlushStart
	// FlushCommitted is the flush's INSERT (and commit) returning.
	FlushCommitted
	// Notified is the flush handing its events to the notifier (local sink or Redis).
	Notified
	// DispatchEvent is the dispatcher loop taking a notification.
	DispatchEvent
	// JobHandOff is the dispatcher handing a cut job to the local worker or asynq.
	JobHandOff
	// WorkerStart is the worker starting a job.
	WorkerStart
	// PostStart is the worker starting the POST (signed, just before the request is written).
	PostStart
	// PostDone is the POST's response head arriving.
	PostDone
	// PublishAnswered is the publish handler writing its answer.
	PublishAnswered
)

var names = [...]string{
	PublishStart: "publish_start", PublishSubmit: "publish_submit", FlushStart: "flush_start", FlushCommitted: "flush_committed",
	Notified: "notified", DispatchEvent: "dispatch_event", JobHandOff: "job_hand_off", WorkerStart: "worker_start",
	PostStart: "post_start", PostDone: "post_done", PublishAnswered: "publish_answered",
}

// String is the stage's snake_case name, as the handler writes it.
func (s Stage) String() string {
	if int(s) < len(names) && names[s] != "" {
		return names[s]
	}
	return "unknown"
}

// capacity is how many marks are kept (about 8 MiB); older ones are overwritten. It
// holds the marks of 20,000 messages, each passing every stage once.
const capacity = 1 << 18

var (
	on   atomic.Bool
	mu   sync.Mutex
	ring []mark
	next int // index of the next mark written; len(ring) once full wraps
	full bool
)

type mark struct {
	stage         Stage
	at            int64 // Unix ns
	queue, offset int64
}

// Enable starts recording. It is meant to be called once at startup; calling it again
// keeps what was recorded.
func Enable() {
	mu.Lock()
	if ring == nil {
		ring = make([]mark, capacity)
	}
	mu.Unlock()
	on.Store(true)
}

// Enabled reports whether marks are recorded.
func Enabled() bool { return on.Load() }

// Now is the time to pass to Mark: the current time while recording, else zero
// (no clock read).
func Now() time.Time {
	if !on.Load() {
		return time.Time{}
	}
	return time.Now()
}

// Mark records that the message at offset of queue passed stage s at `at` (taken
// with Now, or time.Now when already at hand); a no-op unless Enable was called.
func Mark(s Stage, at time.Time, queue, offset int64) {
	if !on.Load() {
		return
	}
	mu.Lock()
	ring[next] = mark{stage: s, at: at.UnixNano(), queue: queue, offset: offset}
	if next++; next == len(ring) {
		next, full = 0, true
	}
	mu.Unlock()
}

// Event is one mark as the handler lists it: the stage's name, the wall-clock time
// in Unix nanoseconds (comparable across processes on one machine) and the message's
// queue and offset (its id is models.MessageID of the two).
type Event struct {
	Stage  string `json:"stage"`
	At     int64  `json:"at"`
	Queue  int64  `json:"queue"`
	Offset int64  `json:"offset"`
}

// Drain returns every mark kept, oldest first, and forgets them.
func Drain() []Event {
	mu.Lock()
	defer mu.Unlock()
	var out []Event
	add := func(ms []mark) {
		for _, m := range ms {
			out = append(out, Event{Stage: m.stage.String(), At: m.at, Queue: m.queue, Offset: m.offset})
		}
	}
	if full {
		add(ring[next:])
	}
	add(ring[:next])
	next, full = 0, false
	return out
}

// Handler serves GET: the marks kept, oldest first, as a JSON array of Event, and
// forgets them; 404 while recording is off.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Enabled() {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Drain())
	})
}
