package dispatcher

import (
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

// reportPace is how long the report reader waits after a read (see
// bus.ReportStreams.Read): gather (config.Dispatcher.ReportGather), so the next read
// takes what several worker sends added, or 0 while this dispatcher owns an ordered
// group, whose next message of a key or queue waits for a report. The loop notes the
// owned groups (note); the reader goroutine asks (wait).
type reportPace struct {
	gather  time.Duration
	ordered atomic.Bool
}

// wait is the reader's pause after a read.
func (p *reportPace) wait() time.Duration {
	if p.ordered.Load() {
		return 0
	}
	return p.gather
}

// note records whether one of groups is ordered, after the owned groups changed.
func (p *reportPace) note(groups map[int64]*groupState) {
	ordered := false
	for _, gs := range groups {
		if gs.g != nil && gs.g.Ordered {
			ordered = true
			break
		}
	}
	p.ordered.Store(ordered)
}

// applyEntry applies the reports of a report stream entry, except the durable
// copies of reports already applied in memory (Report.Applied), and records the
// entry for trimming.
func (d *Dispatcher) applyEntry(e bus.ReportEntry) {
	for _, r := range e.Reports {
		if !r.Applied {
			d.applyReport(r)
		}
	}
	d.reportLog.add(e.ID, e.Reports)
}

// returnBackoff is the delay before a message returned unattempted (shutdown, a
// store error) is sent again: base (config.Dispatcher.ReturnBackoff) doubling per
// return, at most 30 s.
func returnBackoff(base time.Duration, returns int) time.Duration {
	return min(base<<min(returns, 10), 30*time.Second)
}

// applyReport applies a worker's report. For a first-delivery job, delivered,
// retry-written and dead-lettered offsets are done for the cursor (final and
// idempotent, whatever job or generation reported them), and returned ones go back
// to send if the report is from the job that holds them; reports of another cursor
// version are dropped. Every report feeds the group's counters and breaker.
func (d *Dispatcher) applyReport(r delivery.Report) {
	d.reported = true
	gs := d.groups[r.Group]
	if gs == nil {
		return
	}
	js := d.jobs[r.TaskID]
	// When the report came in: observe may write an event (a database round trip),
	// and a returned message's delay must not outlast the pause the report starts.
	nowMS := d.now().UnixMilli()
	d.health.observe(gs, r)
	if r.NextDueMS > 0 {
		gs.health.retryDueBy(time.UnixMilli(r.NextDueMS))
	}
	if len(r.DeadLettered) > 0 {
		d.outboxDue = true
		d.events.counted(gs, models.EventDeadLetterCreated, len(delivery.Expand(r.DeadLettered)), map[string]any{"last_error": gs.lastError})
	}
	if r.Retry {
		gs.retryReported(r)
		if js != nil {
			if len(r.Returned) > 0 {
				gs.health.retryDueBy(d.now())
			}
			if js.settle(r) {
				d.finishJob(js, 0)
			}
		}
		return
	}
	if js != nil && js.orphan {
		if js.settle(r) {
			d.releaseOrphan(js)
		}
		return
	}
	cs := d.byGQ[[2]int64{r.Group, r.Queue}]
	if cs == nil || cs.version != r.Version {
		return
	}
	o := d.orders.of(gs.g)
	for _, rs := range [][]delivery.Range{r.Delivered, r.RetryWritten, r.DeadLettered} {
		for _, off := range delivery.Expand(rs) {
			key := cs.inflight[off].key
			cs.markDone(off)
			o.done(cs, off, key)
		}
	}
	if js == nil {
		return
	}
	back, fenced := cs.takeBack(js, r.Returned, nowMS, d.cfg.ReturnBackoff, d.wakeBy)
	if fenced {
		// The cursor moved on (reset or takeover) and this owner has not seen it yet:
		// reload it; the fenced offsets belong to the new version.
		d.refresh = true
	}
	if r.InPlace != nil {
		back = append(back, o.inPlace(cs, js, r.InPlace)...)
	}
	// Back in offset order: a throttled message is the first sent when the pause ends.
	cs.requeue(back)
	// A progress report proves the job alive: push its deadline out.
	if ext := d.now().Add(d.cfg.JobDeadlineBase); js.deadline.Before(ext) {
		js.deadline = ext
	}
	if r.Final || len(js.remaining) == 0 {
		d.finishJob(js, time.Second)
	}
}

// settle removes every offset r names from js's remaining ones (a retry job's, or
// an orphan's: no cursor to move) and reports whether js has ended: r is final or
// nothing remains.
func (js *jobState) settle(r delivery.Report) bool {
	for _, rs := range [][]delivery.Range{r.Delivered, r.RetryWritten, r.DeadLettered} {
		for _, off := range delivery.Expand(rs) {
			delete(js.remaining, off)
		}
	}
	for _, rs := range r.Returned {
		for _, off := range delivery.Expand(rs) {
			delete(js.remaining, off)
		}
	}
	return r.Final || len(js.remaining) == 0
}

// retryReported keeps the retry rows' throttle counts by a retry job's report r:
// the rows it settled are forgotten, and each row it returned throttled counts one
// more throttle in a row.
func (gs *groupState) retryReported(r delivery.Report) {
	for _, rs := range [][]delivery.Range{r.Delivered, r.RetryWritten, r.DeadLettered} {
		for _, off := range delivery.Expand(rs) {
			delete(gs.retryThrottles, [2]int64{r.Queue, off})
		}
	}
	for _, off := range delivery.Expand(r.Returned[delivery.ReasonThrottled]) {
		gs.throttledRetry(r.Queue, off)
	}
}

// takeBack takes the offsets a report of js returned (by reason) out of the
// cursor's in-flight set and lists those to send again, each with its next send
// time (ms since the epoch): a backoff reason waits returnBackoff(base, returns), a
// state reason (paused, probe, throttled, held, gone) 200 ms, a blocked one waits
// for the orderer's block; wakeBy is told each time. Fenced offsets belong to the
// cursor's next version and are dropped; fenced reports whether there were any.
// Offsets js no longer holds are left alone.
func (cs *cursorState) takeBack(js *jobState, returned map[delivery.Reason][]delivery.Range, nowMS int64, base time.Duration, wakeBy func(time.Time)) (back []pendingMsg, fenced bool) {
	for reason, rs := range returned {
		fenced = fenced || reason == delivery.ReasonFenced
		for _, off := range delivery.Expand(rs) {
			inf, ok := cs.inflight[off]
			if !ok || inf.job != js {
				continue
			}
			delete(cs.inflight, off)
			delete(js.remaining, off)
			if reason == delivery.ReasonFenced {
				continue
			}
			p := pendingMsg{offset: off, createdAt: inf.createdAt, returns: inf.returns, throttles: inf.throttles, key: inf.key}
			if reason == delivery.ReasonThrottled {
				p.throttles++ // its POST was refused; ThrottleLimit in a row make a failed attempt
			}
			if reason == delivery.ReasonBlocked {
				// Behind an ordered job's failed POST: the cursor's block holds them.
				back = append(back, p)
				continue
			}
			if reason.Backoff() {
				p.returns++
				p.notBefore = nowMS + returnBackoff(base, inf.returns).Milliseconds()
			} else {
				// The group's state holds them back; the short delay only keeps a
				// worker's stale view of the group from spinning.
				p.notBefore = nowMS + 200
			}
			wakeBy(time.UnixMilli(p.notBefore))
			back = append(back, p)
		}
	}
	return back, fenced
}
