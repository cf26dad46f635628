// Package stagetrace records when the delivery path passes each of its stages (publish
// handler, group-commit flush, commit, notification, dispatch, job hand-off, POST), so
// a benchmark can break one message's publish-to-receipt time down from timestamps.
// It is off unless Enable was called (HERALD_STAGE_TRACE): then Mark costs one atomic
// load and a predicted branch. Marks carry no message id: a lone message is the only
// one on the path, so the marks between its publish and its receipt are its own.
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

// capacity is how many marks are kept; older ones are overwritten.
const capacity = 1 << 16

var (
	on   atomic.Bool
	mu   sync.Mutex
	ring []mark
	next int // index of the next mark written; len(ring) once full wraps
	full bool
)

type mark struct {
	stage Stage
	at    int64 // Unix ns
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

// Mark records that the path passed stage s now; a no-op unless Enable was called.
func Mark(s Stage) {
	if !on.Load() {
		return
	}
	at := time.Now().UnixNano()
	mu.Lock()
	ring[next] = mark{stage: s, at: at}
	if next++; next == len(ring) {
		next, full = 0, true
	}
	mu.Unlock()
}

// Event is one mark as the handler lists it: the stage's name and the wall-clock time
// in Unix nanoseconds (comparable across processes on one machine).
type Event struct {
	Stage string `json:"stage"`
	At    int64  `json:"at"`
}

// Drain returns every mark kept, oldest first, and forgets them.
func Drain() []Event {
	mu.Lock()
	defer mu.Unlock()
	var out []Event
	add := func(ms []mark) {
		for _, m := range ms {
			out = append(out, Event{Stage: m.stage.String(), At: m.at})
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
