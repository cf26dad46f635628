package worker

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
)

// reporter accumulates a job's per-message outcomes and sends them to the owner's
// report stream at most every ProgressInterval and once at the end: at most one
// Redis write per report, never per message, and one for all the reports a worker
// has waiting for that owner (bus.ReportSenders). Retry rows and dead letters are written before the
// report that names them, so a report never claims a write that did not happen.
//
// A job whose owner is the dispatcher of this process (`herald all`) hands its
// reports over in memory, and also queues each POST's done offsets, as soon as they
// are known, to the owner's stream as a durable copy (delivery.Report.Applied,
// gathered with the worker's other sends). A report is handed over only once the
// copies of what it names are written, so the owner frees a job's share of
// max_in_flight only for durable outcomes: process and owner die together, and a
// successor replays the copies and sends again only what the job's POSTs held, at
// most the group's max_in_flight.
//
// A job of another process's dispatcher reports each POST's done offsets the same
// way, as a progress report of their own (not Applied: the owner applies it), while
// messages of the job still wait for a POST's outcome (left); the last POST's
// outcome goes with the final report. Either way the job's next POST waits until what came before is written
// (awaitCopies), so a worker that dies or stalls repeats only its POSTs in flight.
type reporter struct {
	w      *Worker
	job    delivery.Job
	taskID string
	local  bool // the owner is this process's dispatcher

	// flushing serializes flush from start to hand-over, so the owner gets a job's
	// reports in the order their contents were taken: a progress report still
	// waiting for its durable copies is never overtaken by the final report, which
	// would end the job with offsets the progress report was about to name and make
	// the owner send them again.
	flushing sync.Mutex

	mu        sync.Mutex
	sent      []int64
	retried   []int64
	dead      []int64
	back      map[delivery.Reason][]int64
	nextDueMS int64
	counters  delivery.Counters
	final     bool
	inPlace   *delivery.InPlace
	// left is how many messages the job's POSTs carry that have no outcome yet
	// (expect).
	left int
	// copied is closed once the last durable copy queued is written (local jobs).
	copied <-chan struct{}
}

func newReporter(w *Worker, j delivery.Job) *reporter {
	return &reporter{w: w, job: j, taskID: j.TaskID(), back: map[delivery.Reason][]int64{},
		local: w.local != nil && w.local.Owns(j.Owner)}
}

// expect sets how many messages the job's POSTs carry.
func (r *reporter) expect(msgs int) {
	r.mu.Lock()
	r.left = msgs
	r.mu.Unlock()
}

// early counts n more messages with an outcome and reports, with r.mu held,
// whether theirs goes to the owner now as a progress report of its own (see
// reporter): a job of another process's dispatcher, not a retry job, with
// messages still waiting for a POST.
func (r *reporter) early(n int) bool {
	r.left -= n
	return !r.local && !r.job.Retry && r.left > 0
}

// durable queues the durable copy of one POST's done offsets (see reporter): for
// a local job a copy of what the in-memory report will name (Applied), for an
// early one (early) the progress report itself; the job does not wait for it.
func (r *reporter) durable(delivered, retried, dead []int64, early bool) {
	if (!r.local && !early) || r.job.Retry || len(delivered)+len(retried)+len(dead) == 0 {
		return
	}
	b, _ := json.Marshal(delivery.Report{TaskID: r.taskID, Group: r.job.Group, Queue: r.job.Queue, Version: r.job.Version, Generation: r.job.Generation,
		Delivered: delivery.Ranges(delivered), RetryWritten: delivery.Ranges(retried), DeadLettered: delivery.Ranges(dead), Ordered: r.job.Ordered, Applied: !early})
	done := r.w.senders.Queue(r.job.Owner, b, false)
	r.mu.Lock()
	r.copied = done // a sender writes in queue order: this one closes after the earlier ones
	r.mu.Unlock()
}

// copyWait bounds how long a local job waits for its durable copies: while Redis
// does not take them (a failover), delivery goes on at the cost of repeats after a
// kill in that time, never of a loss.
const copyWait = time.Second

// awaitCopies waits until the durable copies queued so far are written (or given
// up on), at most copyWait; hurry cuts the sender's linger short (a POST of the job
// waits, or an ordered group's next message waits for this report), otherwise the
// copies go with the next gathering (HERALD_WORKER_REPORT_LINGER).
func (r *reporter) awaitCopies(hurry bool) {
	r.mu.Lock()
	done := r.copied
	r.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	if hurry {
		r.w.senders.Hurry(r.job.Owner)
	}
	t := time.NewTimer(copyWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

func (r *reporter) add(c delivery.Counters) {
	r.counters.Successes += c.Successes
	r.counters.Failures += c.Failures
	r.counters.Repeats += c.Repeats
	if c.Successes > 0 {
		r.counters.TailFailures = 0
	}
	r.counters.TailFailures += c.TailFailures
	r.counters.Throttles += c.Throttles
	r.counters.RetryAfterMS = max(r.counters.RetryAfterMS, c.RetryAfterMS)
	r.counters.Gone = r.counters.Gone || c.Gone
	r.counters.Delivered += c.Delivered
	r.counters.FailedMsgs += c.FailedMsgs
	if c.LastStatus != 0 || c.LastError != "" {
		r.counters.LastStatus, r.counters.LastError = c.LastStatus, c.LastError
	}
	r.counters.LatencySumMS += c.LatencySumMS
	r.counters.LatencyMaxMS = max(r.counters.LatencyMaxMS, c.LatencyMaxMS)
}

func (r *reporter) delivered(offsets []int64, c delivery.Counters) {
	r.mu.Lock()
	early := r.early(len(offsets))
	if !early {
		r.sent = append(r.sent, offsets...)
	}
	r.add(c)
	r.mu.Unlock()
	r.durable(offsets, nil, nil, early)
}

// failed records where RetryRecord put failed messages.
func (r *reporter) failed(retried, dead []int64, nextDue time.Time, c delivery.Counters) {
	r.mu.Lock()
	early := r.early(len(retried) + len(dead))
	if !early {
		r.retried = append(r.retried, retried...)
		r.dead = append(r.dead, dead...)
	}
	if ms := nextDue.UnixMilli(); !nextDue.IsZero() && (r.nextDueMS == 0 || ms < r.nextDueMS) {
		r.nextDueMS = ms
	}
	r.add(c)
	r.mu.Unlock()
	r.durable(nil, retried, dead, early)
}

func (r *reporter) returned(reason delivery.Reason, offsets []int64, c delivery.Counters) {
	r.mu.Lock()
	r.left -= len(offsets)
	r.back[reason] = append(r.back[reason], offsets...)
	r.add(c)
	r.mu.Unlock()
}

// flush pushes what accumulated; final marks the job's last report. For a retry job
// it first deletes the delivered messages' retry rows and makes returned ones due again.
func (r *reporter) flush(final bool) {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	if r.final || (!final && len(r.sent) == 0 && len(r.back) == 0 && len(r.retried) == 0 && len(r.dead) == 0 && r.inPlace == nil) {
		r.mu.Unlock()
		return
	}
	rep := delivery.Report{TaskID: r.taskID, Group: r.job.Group, Queue: r.job.Queue, Version: r.job.Version, Generation: r.job.Generation,
		Delivered: delivery.Ranges(r.sent), RetryWritten: delivery.Ranges(r.retried), DeadLettered: delivery.Ranges(r.dead), NextDueMS: r.nextDueMS,
		Counters: r.counters, Final: final, Retry: r.job.Retry, Probe: r.job.Probe, InPlace: r.inPlace, Ordered: r.job.Ordered}
	var back []int64
	if len(r.back) > 0 {
		rep.Returned = map[delivery.Reason][]delivery.Range{}
		for k, v := range r.back {
			rep.Returned[k] = delivery.Ranges(v)
			back = append(back, v...)
		}
	}
	sent := r.sent
	r.inPlace = nil
	r.sent, r.retried, r.dead, r.back, r.nextDueMS, r.counters, r.final = nil, nil, nil, map[delivery.Reason][]int64{}, 0, delivery.Counters{}, final
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r.job.Retry {
		if err := r.w.st.RetryDelete(ctx, r.job.Group, r.job.Queue, sent); err != nil {
			r.w.log.Warn("delete delivered retry rows", "task", r.taskID, "err", err)
		}
		delay := time.Duration(rep.Counters.RetryAfterMS) * time.Millisecond
		if err := r.w.st.RetryRelease(ctx, r.job.Group, r.job.Queue, back, delay); err != nil {
			r.w.log.Warn("release returned retry rows", "task", r.taskID, "err", err)
		}
	}
	r.awaitCopies(r.job.Ordered || r.job.Probe)                 // what rep names is durable before the owner frees its credits
	if r.w.local != nil && r.w.local.Report(r.job.Owner, rep) { // its durable copies went POST by POST
		return
	}
	b, _ := json.Marshal(rep)
	// An ordered group's next message of this key or queue waits for this report;
	// other jobs' reports may linger for company (bus.ReportSenders).
	r.w.senders.Send(r.job.Owner, b, r.job.Ordered || r.job.Probe)
}

// heartbeat flushes progress every interval and at once when the job is fenced,
// until ctx ends. (The job's heartbeat key, its liveness, is the bus's: bus.Source.)
func (r *reporter) heartbeat(ctx context.Context, interval time.Duration) {
	progress := time.NewTicker(interval)
	defer progress.Stop()
	var fenced <-chan struct{}
	if !r.job.Retry {
		fenced = r.w.fences.Changed()
		if r.w.fences.Stale(r.job.Group, r.job.Queue, r.job.Version) {
			fenced = nil // fenced before this started (heartbeatDelay): flush now
			r.flush(false)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-fenced:
			fenced = r.w.fences.Changed()
			if r.w.fences.Stale(r.job.Group, r.job.Queue, r.job.Version) {
				// Fenced by a takeover: hand what was delivered to the old owner's stream
				// now, where the new owner reads it before it dispatches.
				fenced = nil
				r.flush(false)
			}
		case <-progress.C:
			r.flush(false)
		}
	}
}
