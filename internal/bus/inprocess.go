package bus

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/heraldhq/herald/internal/delivery"
)

// ErrNoWorker refuses a job sent on an InProcess bus whose worker stopped.
var ErrNoWorker = errors.New("the worker of this process stopped taking jobs")

// InProcess is the bus of a process that runs the dispatcher and a worker (`herald
// all`): a job sent waits in memory for one of the worker's slots and its reports
// come back over a channel, with no Redis round trip (an asynq task costs about 21
// Redis commands). It is both the dispatcher's Jobs and the worker's Source, and
// the only carrier in such a process: a job waits for a slot rather than going to
// another process. Both roles die together, so a job is Alive until its runner
// returned and none is ever Lost; the worker also writes each POST's outcomes to
// the dispatcher's report stream as durable copies (worker/report.go), which a
// successor replays. Safe for concurrent use; create it with NewInProcess.
type InProcess struct {
	q *runQueue

	mu       sync.RWMutex
	owner    string
	reports  chan<- delivery.Report
	detached chan struct{}
	started  bool

	held  sync.Map     // task id → struct{}: sent and not returned
	count atomic.Int64 // entries in held
}

// NewInProcess returns an InProcess bus; jobs sent before the worker starts wait
// for it.
func NewInProcess() *InProcess { return &InProcess{q: newRunQueue()} }

// Send queues jobs for the worker's slots; it refuses them (ErrNoWorker) once the
// worker stopped.
func (p *InProcess) Send(_ context.Context, jobs []Outgoing) []Refusal {
	var refused []Refusal
	for _, o := range jobs {
		id := o.Job.TaskID()
		p.held.Store(id, struct{}{})
		p.count.Add(1)
		returned := func() {
			p.held.Delete(id)
			p.count.Add(-1)
		}
		if !p.q.add(queued{job: o.Job, timeout: o.Timeout, done: returned}) {
			returned()
			refused = append(refused, Refusal{Job: o.Job, Err: ErrNoWorker})
		}
	}
	return refused
}

// Flush does nothing: Send hands each job over at once, so a job cut first starts
// first.
func (p *InProcess) Flush(context.Context) []Refusal { return nil }

// Alive reports whether j waits for a slot or runs.
func (p *InProcess) Alive(_ context.Context, j delivery.Job) bool {
	_, ok := p.held.Load(j.TaskID())
	return ok
}

// Lost returns nothing: a worker of this process dies with its dispatcher.
func (p *InProcess) Lost(context.Context) []string { return nil }

// Forget does nothing: a job leaves InProcess when its runner returns.
func (p *InProcess) Forget(string) {}

// Peers does nothing: this process's worker serves only its own dispatcher.
func (p *InProcess) Peers(int) {}

// Busy reports how many sent jobs wait or run.
func (p *InProcess) Busy() int { return int(p.count.Load()) }

// Close does nothing; Stop ends the worker's side.
func (p *InProcess) Close() error { return nil }

// Attach makes Report hand reports for owner to reports until Detach.
func (p *InProcess) Attach(owner string, reports chan<- delivery.Report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.owner, p.reports, p.detached = owner, reports, make(chan struct{})
}

// Detach stops handing reports to the dispatcher: Report calls made from now on,
// and those waiting on a full channel, return false, so reporters fall back to the
// report stream, where a successor finds them. The dispatcher still applies what
// its channel holds.
func (p *InProcess) Detach() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.detached != nil {
		close(p.detached)
	}
	p.owner, p.reports, p.detached = "", nil, nil
}

// Report hands r to the attached dispatcher if it is owner, waiting while its
// channel is full, and reports whether it did; false means the caller adds r to
// owner's report stream.
func (p *InProcess) Report(owner string, r delivery.Report) bool {
	p.mu.RLock()
	reports, detached, ok := p.reports, p.detached, p.owner == owner && p.reports != nil
	p.mu.RUnlock()
	if !ok {
		return false
	}
	select {
	case <-detached:
		return false
	default:
	}
	select {
	case reports <- r:
		return true
	case <-detached:
		return false
	}
}

// Owns reports whether owner is the attached dispatcher.
func (p *InProcess) Owns(owner string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.reports != nil && p.owner == owner
}

// Start runs the jobs sent, in order, on r as slots free up.
func (p *InProcess) Start(_ context.Context, r Runner, slots Slots) error {
	p.mu.Lock()
	p.started = true
	p.mu.Unlock()
	go p.q.serve(r, slots)
	return nil
}

// Stop refuses later sends and starts no waiting job, calls halt, returns the
// jobs still waiting and waits for the running ones.
func (p *InProcess) Stop(halt func()) {
	p.q.freeze()
	halt()
	p.mu.RLock()
	started := p.started
	p.mu.RUnlock()
	if started {
		p.q.halt()
	}
}

var (
	_ Jobs   = (*InProcess)(nil)
	_ Source = (*InProcess)(nil)
)

// Open finds no job: an in-process job ends with the process that ran it, so a
// dispatcher that took a cursor over has no previous owner's POST to wait for.
func (p *InProcess) Open(context.Context, string, int64, int64) ([]OpenJob, error) { return nil, nil }

// StillOpen returns nothing (Open lists no job).
func (p *InProcess) StillOpen(context.Context, []OpenJob) ([]OpenJob, error) { return nil, nil }
