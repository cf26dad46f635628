package dispatcher

import (
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// noOrder is the orderer of an unordered group: up to MaxJobsInFlight jobs per
// cursor, each of up to job_size due messages (fewer when the group's POST time
// would make the job outlast jobTurn) sent batch_size a POST with the parallelism
// the group's credits give (share); a failure goes through the retry
// topic, so it keeps no state of its own.
type noOrder struct {
	orderBase
	// sched writes the retries of a job without reports; events counts its dead
	// letters.
	sched  scheduleStore
	events *opEvents
}

// cut takes the lowest due offsets of cs, up to job_size (a probe: one batch). A
// partial batch waits up to batch_window_ms for more (Lambda's batching window).
func (o *noOrder) cut(ctx context.Context, gs *groupState, cs *cursorState, now time.Time, probe bool) bool {
	g := gs.g
	if len(cs.pending) == 0 || cs.jobs >= o.cfg.MaxJobsInFlight || gs.inflightP >= g.MaxInFlight || cs.takeover != nil {
		return false
	}
	if g.BatchWindowMS > 0 && len(cs.pending) < g.BatchSize && !probe {
		due := time.UnixMilli(cs.pending[0].createdAt).Add(time.Duration(g.BatchWindowMS) * time.Millisecond)
		if now.Before(due) {
			o.host.wakeBy(due)
			return false
		}
	}
	n := o.cfg.JobSize
	if probe {
		n = g.BatchSize
	}
	nowMS := now.UnixMilli()
	due, nextDue, headThrottles := 0, int64(0), 0
	for _, p := range cs.pending {
		if p.notBefore <= nowMS {
			if due == 0 {
				headThrottles = p.throttles // the first due message's class decides the job's
			}
			if due++; due == n {
				break
			}
		} else if nextDue == 0 || p.notBefore < nextDue {
			nextDue = p.notBefore
		}
	}
	if nextDue > 0 {
		o.host.wakeBy(time.UnixMilli(nextDue))
	}
	if due == 0 {
		return false
	}
	if n = gs.pace.allow(now, due); n < 1 {
		o.host.wakeBy(gs.pace.next(now, due))
		return false
	}
	n = gs.jobMessages(n, len(cs.pending) > n)
	// A batch the endpoint throttled is bisected: its messages travel apart from
	// the others, in smaller POSTs each time (delivery.ThrottleLimit).
	throttled := g.BatchSize > 1 && headThrottles > 0
	take := make([]pendingMsg, 0, n)
	keep := cs.pending[:0]
	most := 0
	for i, p := range cs.pending {
		if len(take) == n {
			keep = append(keep, cs.pending[i:]...)
			break
		}
		if p.notBefore <= nowMS && (g.BatchSize == 1 || (p.throttles > 0) == throttled) {
			take = append(take, p)
			most = max(most, p.throttles)
		} else {
			keep = append(keep, p)
		}
	}
	cs.pending = keep
	gs.pace.take(len(take))
	sh := jobShape{attempt: 1, probe: probe}
	batch := g.BatchSize
	if throttled {
		batch = delivery.BisectedBatch(g.BatchSize, most)
		sh.batch = batch
	}
	posts := (len(take) + batch - 1) / batch
	sh.parallelism = gs.credits(posts, len(cs.pending) > 0)
	return o.send(ctx, gs, cs, take, sh, now)
}

// inPlace returns ip's messages to send again and holds nothing back: only an
// ordered job's failed POST is retried in place, and the group has stopped
// ordering since it was cut.
func (o *noOrder) inPlace(cs *cursorState, js *jobState, ip *delivery.InPlace) []pendingMsg {
	return takeBack(cs, js, ip)
}

// done keeps nothing.
func (o *noOrder) done(*cursorState, int64, string) {}

// noReport sends a poison job's undone messages to the retry topic with error
// class no_report, so it costs retries, never a stalled cursor. If that write
// fails, they are backed off and sent again.
func (o *noOrder) noReport(ctx context.Context, js *jobState) {
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
	res, err := o.sched.RetryRecord(ctx, g.ID, g.MaxAttempts, g.RetrySchedule, fails)
	if err != nil {
		o.log.Warn("write no_report retries", "group", g.Name, "err", err)
		o.host.finishJob(js, 30*time.Second)
		return
	}
	if !res.NextDue.IsZero() {
		js.group.health.retryDueBy(res.NextDue)
	}
	if len(res.DeadLettered) > 0 {
		o.events.counted(js.group, models.EventDeadLetterCreated, len(res.DeadLettered), map[string]any{"last_error": string(delivery.ClassNoReport)})
	}
	cs := js.cursor
	o.host.finishJob(js, 0)
	if cs != nil {
		for _, off := range append(res.Retried, res.DeadLettered...) {
			cs.pending = slices.DeleteFunc(cs.pending, func(p pendingMsg) bool { return p.offset == off })
			cs.markDone(off)
		}
	}
}

// takenOver keeps nothing.
func (o *noOrder) takenOver(context.Context, *cursorState, []int64) {}

// blocked: an unordered cursor holds nothing back.
func (o *noOrder) blocked(*cursorState, map[string]bool) bool { return false }

// void keeps nothing.
func (o *noOrder) void(*cursorState, bool) {}

// load reads nothing.
func (o *noOrder) load(context.Context, map[int64]*groupState, func(int64, int64) *cursorState, map[*cursorState]bool) bool {
	return false
}

// save writes nothing.
func (o *noOrder) save(context.Context) {}
