package dispatcher

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/stagetrace"
	"github.com/heraldhq/herald/models"
)

// jobState is a delivery job in flight: which offsets still await a report, the
// credits it holds, and when the dispatcher stops waiting for it.
type jobState struct {
	job       delivery.Job
	group     *groupState
	cursor    *cursorState // nil for a retry job
	remaining map[int64]bool
	deadline  time.Time
	// leaseEnd is when a retry job's claim lease on its rows ends (claimRetries), so
	// its unreported rows are due again; zero for a first delivery.
	leaseEnd time.Time
	// orphan says its cursor was dropped (a reset or a lost fence, dropCursor): it
	// only holds its credits until its final report, or until the bus says no
	// worker holds it (retire).
	orphan bool
}

// step reads every dirty queue once for all the cursors owned on it, then cuts jobs.
func (d *Dispatcher) step(ctx context.Context) {
	d.takeovers.finish(ctx)
	d.finishLeaving(ctx)
	d.reader.readDirty(ctx)
	d.cut(ctx)
}

// cut turns pending messages and due retries into delivery jobs for every running
// group with work (hasWork), within the group's in-flight credits, its (effective)
// rate and each cursor's job cap; a throttled group or an open breaker sends
// nothing, and a half-open breaker sends one probe batch.
func (d *Dispatcher) cut(ctx context.Context) {
	defer d.flush(ctx)
	now := d.now()
	for _, gs := range d.groups {
		if gs.g.Status != models.GroupRunning || !gs.leaving.IsZero() || !gs.hasWork(now) || !d.health.mayCut(gs, now) {
			continue
		}
		if gs.health.breaker.state == breakerHalfOpen {
			d.cutProbe(ctx, gs, now)
			continue
		}
		d.cutGroup(ctx, gs, now)
	}
}

// cutGroup shares the group's tokens and credits among its flows — each cursor, then
// the retry topic — one job per turn, round-robin (see rotation and share).
func (d *Dispatcher) cutGroup(ctx context.Context, gs *groupState, now time.Time) {
	gs.busy = 0
	for _, cs := range gs.cursors {
		if len(cs.pending) > 0 {
			gs.busy++
		}
	}
	if gs.retriesWaiting(now) {
		gs.busy++
	}
	if gs.busy == 0 && now.Before(gs.health.nextRetry) {
		return
	}
	gs.turns.run(len(gs.cursors)+1, func(i int) bool {
		if gs.inflightP >= gs.g.MaxInFlight {
			return false
		}
		if i == len(gs.cursors) {
			return !now.Before(gs.health.nextRetry) && d.claimRetries(ctx, gs, now, d.cfg.JobSize, false)
		}
		return d.cutOne(ctx, gs, gs.cursors[i], now, false)
	})
}

// credits returns a new job's parallelism for posts POSTs (see share).
func (gs *groupState) credits(posts int, more bool) int {
	return share{max: gs.g.MaxInFlight, used: gs.inflightP, busy: gs.busy}.credits(posts, more)
}

// cutProbe sends the breaker's one test batch from the head of the backlog, or from
// the retry topic when no first delivery waits.
func (d *Dispatcher) cutProbe(ctx context.Context, gs *groupState, now time.Time) {
	gs.busy = 1
	// The probe tests the endpoint: a fresh message of any cursor first; a blocked
	// key's POST retried in place, which may fail by its content, only when no
	// cursor has one.
	defer func() { gs.probeFresh = false }()
	for _, fresh := range []bool{true, false} {
		gs.probeFresh = fresh
		for _, cs := range gs.cursors {
			if d.cutOne(ctx, gs, cs, now, true) {
				gs.health.breaker.probing = true
				return
			}
		}
	}
	if d.claimRetries(ctx, gs, now, gs.g.BatchSize, true) {
		gs.health.breaker.probing = true
	}
}

// cutOne cuts at most one job from cs by the group's ordering mode (orderer.cut)
// and reports whether it did. A probe is one batch.
func (d *Dispatcher) cutOne(ctx context.Context, gs *groupState, cs *cursorState, now time.Time, probe bool) bool {
	return d.orders.of(gs.g).cut(ctx, gs, cs, now, probe)
}

// startJob registers a new job and enqueues it: its parallelism is taken from the
// group's credits, and for a first delivery (js.cursor set) taken moves to the
// cursor's in-flight set and the cursor counts one more job; a retry job's offsets
// are those of js.job. If the enqueue fails, finishJob undoes all of it (see
// enqueueJob). It reports whether the job is in flight.
func (d *Dispatcher) startJob(ctx context.Context, js *jobState, taken []pendingMsg, now time.Time) bool {
	cs := js.cursor
	if cs == nil {
		offsets := delivery.Expand(js.job.Offsets)
		js.remaining = make(map[int64]bool, len(offsets))
		for _, off := range offsets {
			js.remaining[off] = true
		}
	} else {
		js.remaining = make(map[int64]bool, len(taken))
		for _, t := range taken {
			js.remaining[t.offset] = true
			cs.inflight[t.offset] = inflightMsg{job: js, createdAt: t.createdAt, returns: t.returns, throttles: t.throttles, key: t.key}
		}
		cs.jobs++
	}
	js.group.inflightP += js.job.Parallelism
	return d.enqueueJob(ctx, js, now)
}

// enqueueJob puts a registered job (startJob, redispatch) in d.jobs, sets its
// deadline (jobLifetime of what remains) and sends it on the bus, which may hold it
// until the flush at the end of the cut or deadline check that made it (flush). A
// job the bus refuses gives its credits back and its messages come due again after
// enqueueRetry (a retry job's when its claim lease ends). It reports whether the
// job is in flight.
func (d *Dispatcher) enqueueJob(ctx context.Context, js *jobState, now time.Time) bool {
	d.jobs[js.job.TaskID()] = js
	dl := d.jobLifetime(js.group.g, len(js.remaining), js.job.Parallelism)
	js.deadline = now.Add(dl)
	if at := stagetrace.Now(); !at.IsZero() {
		for _, o := range delivery.Expand(js.job.Offsets) {
			stagetrace.Mark(stagetrace.JobHandOff, at, js.job.Queue, o)
		}
	}
	d.refused(d.bus.Send(ctx, []bus.Outgoing{{Job: js.job, Timeout: max(dl, time.Second)}}))
	return d.jobs[js.job.TaskID()] == js
}

// enqueueRetry is how long a job's messages wait after the bus refused it before
// they are cut into a job again. Short, because the usual cause is a Redis
// failover, and the first send after the new master is known should not wait out
// more than this.
const enqueueRetry = 250 * time.Millisecond

// flush ends a cut or deadline check: the jobs the bus reports Lost (their worker
// died) are re-dispatched first, then the bus carries what it held of this step's
// jobs (bus.Jobs.Flush: on Redis, the jobs of several groups or queues share one
// PUBLISH or one asynq task).
func (d *Dispatcher) flush(ctx context.Context) {
	d.bus.Peers(len(d.members.live))
	if lost := d.bus.Lost(ctx); len(lost) > 0 {
		now := d.now()
		for _, id := range lost {
			if js := d.jobs[id]; js != nil {
				d.retire(ctx, js, now)
			}
		}
	}
	d.refused(d.bus.Flush(ctx))
}

// refused releases the jobs the bus could not carry (see enqueueJob).
func (d *Dispatcher) refused(rs []bus.Refusal) {
	for _, r := range rs {
		d.log.Warn("send delivery job", "task", r.Job.TaskID(), "retry", r.Job.Retry, "ordered", r.Job.Ordered, "generation", r.Job.Generation, "err", r.Err)
		if js := d.jobs[r.Job.TaskID()]; js != nil {
			d.finishJob(js, enqueueRetry)
		}
	}
}

// dropJob stops tracking job id (final report, re-dispatch, release).
func (d *Dispatcher) dropJob(id string) {
	delete(d.jobs, id)
	d.bus.Forget(id)
}

// carried returns the messages of take (offset order) when a local notification
// brought every one of them, else nil (the worker loads them).
func carried(take []pendingMsg) []models.Message {
	for _, t := range take {
		if t.msg == nil {
			return nil
		}
	}
	out := make([]models.Message, len(take))
	for i, t := range take {
		out[i] = *t.msg
	}
	return out
}

// jobLifetime is the one measure of how long a job of msgs messages sent par POSTs
// at a time may take: JobDeadlineBase (40 s) + its POST rounds (⌈⌈msgs/batch_size⌉ /
// par⌉) × timeout_ms + the time the group's rate needs for msgs messages. It is a
// job's deadline (enqueue), and a retry claim of n rows leases them for
// jobLifetime(g, n, 1), the longest deadline any job cut from them can get (fewer
// messages, parallelism ≥ 1), so no claimed row comes due again while the job
// holding it is within its deadline.
func (d *Dispatcher) jobLifetime(g *models.Group, msgs, par int) time.Duration {
	posts := (msgs + max(g.BatchSize, 1) - 1) / max(g.BatchSize, 1)
	rounds := (posts + max(par, 1) - 1) / max(par, 1)
	dl := d.cfg.JobDeadlineBase + time.Duration(rounds)*time.Duration(g.TimeoutMS)*time.Millisecond
	if g.RateLimit > 0 {
		dl += time.Duration(msgs) * time.Second / time.Duration(g.RateLimit)
	}
	return dl
}

// finishJob releases a job's credits and returns its unreported offsets to the
// to-send set after backoff.
func (d *Dispatcher) finishJob(js *jobState, backoff time.Duration) {
	cs := js.cursor
	if _, ok := d.jobs[js.job.TaskID()]; !ok {
		return
	}
	d.dropJob(js.job.TaskID())
	js.group.inflightP -= js.job.Parallelism
	if js.job.Probe {
		js.group.health.breaker.probing = false
	}
	if cs == nil {
		// A retry job's unreported rows become due again when their claim lease ends.
		js.group.health.retryDueBy(js.leaseEnd)
		return
	}
	cs.jobs--
	notBefore := d.now().Add(backoff).UnixMilli()
	back := make([]pendingMsg, 0, len(js.remaining))
	for off := range js.remaining {
		inf := cs.inflight[off]
		delete(cs.inflight, off)
		back = append(back, pendingMsg{offset: off, createdAt: inf.createdAt, notBefore: notBefore, returns: inf.returns, throttles: inf.throttles, key: inf.key})
	}
	cs.requeue(back)
	js.remaining = nil
	if backoff > 0 {
		d.wakeBy(time.UnixMilli(notBefore))
	}
}

// checkDeadlines re-dispatches the jobs the bus reports Lost and those whose
// deadline passed with no report unless the bus says they are still held
// (bus.Jobs.Alive: the deadline is then extended by JobDeadlineBase): the rest is
// sent again as generation n+1. After MaxGenerations the messages are backed off
// with class no_report.
func (d *Dispatcher) checkDeadlines(ctx context.Context) {
	defer d.flush(ctx)
	now := d.now()
	for _, js := range d.jobs {
		if now.Before(js.deadline) {
			continue
		}
		if d.bus.Alive(ctx, js.job) {
			js.deadline = now.Add(d.cfg.JobDeadlineBase)
			continue
		}
		d.retire(ctx, js, now)
	}
}

// retire re-dispatches js as its next generation, or after MaxGenerations backs its
// messages off with class no_report (checkDeadlines, a lapsed worker).
func (d *Dispatcher) retire(ctx context.Context, js *jobState, now time.Time) {
	id := js.job.TaskID()
	if js.orphan {
		d.releaseOrphan(js) // no worker holds it: its POSTs are over
		return
	}
	metrics.JobsRedispatched.Inc()
	if js.job.Generation+1 >= d.cfg.MaxGenerations {
		d.log.Warn("job exhausted its generations without reports; its messages go to the retry topic", "task", id, "class", delivery.ClassNoReport)
		js.group.lastError = string(delivery.ClassNoReport)
		o := orderer(d.orders.none) // unordered jobs and retry jobs: the retry topic
		if js.job.Ordered {
			o = d.orders.of(js.group.g)
		}
		o.noReport(ctx, js)
		return
	}
	d.redispatch(ctx, js, now)
}

// releaseOrphan stops tracking an orphaned job and gives its credits back.
func (d *Dispatcher) releaseOrphan(js *jobState) {
	d.dropJob(js.job.TaskID())
	js.group.inflightP -= js.job.Parallelism
	if js.job.Probe {
		js.group.health.breaker.probing = false
	}
}

// redispatch enqueues what remains of old as its next generation (see checkDeadlines).
func (d *Dispatcher) redispatch(ctx context.Context, old *jobState, now time.Time) {
	cs := old.cursor
	d.dropJob(old.job.TaskID())
	offsets := make([]int64, 0, len(old.remaining))
	for off := range old.remaining {
		offsets = append(offsets, off)
	}
	j := old.job
	j.Generation++
	j.Messages = nil // the worker loads what is left
	j.Offsets = delivery.Ranges(offsets)
	if j.Retry {
		was := map[int64]int{}
		for i, off := range delivery.Expand(old.job.Offsets) {
			if i < len(old.job.Attempts) {
				was[off] = old.job.Attempts[i]
			}
		}
		j.Attempts = nil
		for _, off := range delivery.Expand(j.Offsets) {
			j.Attempts = append(j.Attempts, was[off])
		}
	}
	// The new generation holds the old one's credits, cursor job and claim lease.
	js := &jobState{job: j, group: old.group, cursor: cs, remaining: old.remaining, leaseEnd: old.leaseEnd}
	if cs != nil {
		for off := range js.remaining {
			inf := cs.inflight[off]
			inf.job = js
			cs.inflight[off] = inf
		}
	}
	d.log.Info("re-dispatching job without reports", "task", j.TaskID())
	d.enqueueJob(ctx, js, now)
}
