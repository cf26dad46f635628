package delivery

import (
	"sync"
	"sync/atomic"
	"time"
)

// Local links the dispatcher and the worker of one process (`herald all`): a job the
// dispatcher cuts runs on this process's worker when it has a free slot, without an
// asynq round trip (about 21 Redis commands per job: enqueue, dequeue, an empty
// dequeue and done), and that worker's reports for this dispatcher reach it without
// RPUSH and BLMPOP. Anything Local cannot take — no worker attached, every slot
// busy, a report for another owner or after the dispatcher detached — goes through
// Redis as between separate processes, so Local changes costs, never guarantees: a
// local job is tracked, fenced, timed out and re-dispatched like any other, and both
// roles die together with the process. Safe for concurrent use; the zero value has
// nothing attached.
type Local struct {
	mu       sync.RWMutex
	owner    string
	reports  chan<- Report
	detached chan struct{}
	run      LocalRunner
	running  sync.Map     // task id → struct{}, local jobs not finished
	count    atomic.Int64 // entries in running
}

// LocalRunner starts job j on the worker and reports whether it took it; it must not
// block. timeout bounds the job like asynq's task timeout; done must be called once
// when the job has finished and flushed its final report.
type LocalRunner func(j Job, timeout time.Duration, done func()) bool

// AttachDispatcher makes Report hand reports for owner to reports until
// DetachDispatcher.
func (l *Local) AttachDispatcher(owner string, reports chan<- Report) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.owner, l.reports, l.detached = owner, reports, make(chan struct{})
}

// DetachDispatcher stops handing reports to the dispatcher: Report calls made from
// now on, and those waiting on a full channel, return false, so reporters fall back
// to Redis, where a successor finds them. The dispatcher still applies what its
// channel holds.
func (l *Local) DetachDispatcher() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.detached != nil {
		close(l.detached)
	}
	l.owner, l.reports, l.detached = "", nil, nil
}

// Report hands r to the attached dispatcher if it is owner, waiting while its channel
// is full, and reports whether it did; false means the caller pushes r to Redis.
func (l *Local) Report(owner string, r Report) bool {
	l.mu.RLock()
	reports, detached, ok := l.reports, l.detached, l.owner == owner && l.reports != nil
	l.mu.RUnlock()
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
func (l *Local) Owns(owner string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.reports != nil && l.owner == owner
}

// AttachWorker registers the worker's runner; nil detaches it.
func (l *Local) AttachWorker(run LocalRunner) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.run = run
}

// Offer gives j to the attached worker and reports whether it runs there; false
// means the caller enqueues it on asynq.
func (l *Local) Offer(j Job, timeout time.Duration) bool {
	l.mu.RLock()
	run := l.run
	l.mu.RUnlock()
	if run == nil {
		return false
	}
	id := j.TaskID()
	l.running.Store(id, struct{}{})
	l.count.Add(1)
	finished := func() {
		l.running.Delete(id)
		l.count.Add(-1)
	}
	if !run(j, timeout, finished) {
		finished()
		return false
	}
	return true
}

// Busy reports how many local jobs have not finished.
func (l *Local) Busy() int { return int(l.count.Load()) }

// Running reports whether the local job with task id has not finished.
func (l *Local) Running(id string) bool {
	_, ok := l.running.Load(id)
	return ok
}
