package dispatcher

import (
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/stagetrace"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
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
}

// cut turns pending messages and due retries into delivery jobs for every running
// group with work (hasWork), within the group's in-flight credits, its (effective)
// rate and each cursor's job cap; a throttled group or an open breaker sends
// nothing, and a half-open breaker sends one probe batch.
func (d *Dispatcher) cut(ctx context.Context) {
	defer d.flush(ctx)
	now := d.now()
	for _, gs := range d.groups {
		if gs.g.Status != models.GroupRunning || !gs.hasWork(now) || !d.mayCut(gs, now) {
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
	for _, cs := range gs.cursors {
		if d.cutOne(ctx, gs, cs, now, true) {
			gs.health.breaker.probing = true
			return
		}
	}
	if d.claimRetries(ctx, gs, now, gs.g.BatchSize, true) {
		gs.health.breaker.probing = true
	}
}

// cutOne cuts at most one job from cs, the lowest due offsets first, and reports
// whether it did. A probe is one batch.
func (d *Dispatcher) cutOne(ctx context.Context, gs *groupState, cs *cursorState, now time.Time, probe bool) bool {
	g := gs.g
	if g.OrderedByKey() {
		return d.cutOrderedKey(ctx, gs, cs, now, probe)
	}
	if len(cs.keyBlocks) > 0 {
		cs.clearKeyBlocks() // no longer ordered by key: its blocked keys are void
	}
	if g.Ordered {
		return d.cutOrdered(ctx, gs, cs, now, probe)
	}
	cs.clearBlock() // no longer ordered: a block left from then is void
	if len(cs.pending) == 0 || cs.jobs >= d.cfg.MaxJobsInFlight || gs.inflightP >= g.MaxInFlight || cs.takeover != nil {
		return false
	}
	if g.BatchWindowMS > 0 && len(cs.pending) < g.BatchSize && !probe {
		// A partial batch waits up to batch_window_ms for more (Lambda's batching window).
		due := time.UnixMilli(cs.pending[0].createdAt).Add(time.Duration(g.BatchWindowMS) * time.Millisecond)
		if now.Before(due) {
			d.wakeBy(due)
			return false
		}
	}
	n := d.cfg.JobSize
	if probe {
		n = g.BatchSize
	}
	nowMS := now.UnixMilli()
	due, nextDue := 0, int64(0)
	for _, p := range cs.pending {
		if p.notBefore <= nowMS {
			if due++; due == n {
				break
			}
		} else if nextDue == 0 || p.notBefore < nextDue {
			nextDue = p.notBefore
		}
	}
	if nextDue > 0 {
		d.wakeBy(time.UnixMilli(nextDue))
	}
	if due == 0 {
		return false
	}
	if n = gs.pace.allow(now, due); n < 1 {
		d.wakeBy(gs.pace.next(now, due))
		return false
	}
	take := make([]pendingMsg, 0, n)
	keep := cs.pending[:0]
	for i, p := range cs.pending {
		if len(take) == n {
			keep = append(keep, cs.pending[i:]...)
			break
		}
		if p.notBefore <= nowMS {
			take = append(take, p)
		} else {
			keep = append(keep, p)
		}
	}
	cs.pending = keep
	gs.pace.take(len(take))
	posts := (len(take) + g.BatchSize - 1) / g.BatchSize
	p := gs.credits(posts, len(cs.pending) > 0)
	offsets := make([]int64, len(take))
	for i, t := range take {
		offsets[i] = t.offset
	}
	j := delivery.Job{Group: g.ID, Queue: cs.queueID, Version: cs.version, Owner: d.id, Offsets: delivery.Ranges(offsets), Parallelism: p, Attempt: 1, Probe: probe,
		LastThrottle: lastThrottle(take), Messages: carried(take)}
	return d.startJob(ctx, &jobState{job: j, group: gs, cursor: cs}, take, now)
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
				metrics.JobsRedispatched.Inc()
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
		metrics.JobsRedispatched.Inc()
		d.retire(ctx, js, now)
	}
}

// retire re-dispatches js as its next generation, or after MaxGenerations backs its
// messages off with class no_report (checkDeadlines, a lapsed worker).
func (d *Dispatcher) retire(ctx context.Context, js *jobState, now time.Time) {
	id := js.job.TaskID()
	if js.job.Generation+1 >= d.cfg.MaxGenerations {
		d.log.Warn("job exhausted its generations without reports; its messages go to the retry topic", "task", id, "class", delivery.ClassNoReport)
		js.group.lastError = string(delivery.ClassNoReport)
		switch {
		case js.job.Ordered && js.group.g.OrderedByKey():
			d.orderedKeyNoReport(js)
		case js.job.Ordered:
			d.orderedNoReport(js)
		default:
			d.noReport(ctx, js)
		}
		return
	}
	d.redispatch(ctx, js, now)
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

// noReport sends a poison job's undone messages to the retry topic with error class
// no_report, so it costs retries, never a stalled cursor. If that write
// fails, they are backed off and sent again.
func (d *Dispatcher) noReport(ctx context.Context, js *jobState) {
	g := js.group.g
	attempts := map[int64]int{}
	for i, off := range delivery.Expand(js.job.Offsets) {
		attempts[off] = max(js.job.Attempt, 1)
		if js.job.Retry && i < len(js.job.Attempts) {
			attempts[off] = js.job.Attempts[i]
		}
	}
	var fails []store.Failure
	for off := range js.remaining {
		fails = append(fails, store.Failure{QueueID: js.job.Queue, Offset: off, Attempt: attempts[off], LastError: string(delivery.ClassNoReport)})
	}
	res, err := d.sched.RetryRecord(ctx, g.ID, g.MaxAttempts, g.RetrySchedule, fails)
	if err != nil {
		d.log.Warn("write no_report retries", "group", g.Name, "err", err)
		d.finishJob(js, 30*time.Second)
		return
	}
	if !res.NextDue.IsZero() {
		js.group.health.retryDueBy(res.NextDue)
	}
	if len(res.DeadLettered) > 0 {
		d.events.counted(js.group, models.EventDeadLetterCreated, len(res.DeadLettered), map[string]any{"last_error": string(delivery.ClassNoReport)})
	}
	cs := js.cursor
	d.finishJob(js, 0)
	if cs != nil {
		for _, off := range append(res.Retried, res.DeadLettered...) {
			cs.pending = slices.DeleteFunc(cs.pending, func(p pendingMsg) bool { return p.offset == off })
			cs.markDone(off)
		}
	}
}
