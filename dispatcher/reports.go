package dispatcher

import (
	"time"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

// reportGather is how long the report reader waits after a read (see
// bus.ReportStreams.Read): ReportGather, so the next read takes what several worker
// sends added, unless this dispatcher owns an ordered group, whose next message of
// a key or queue waits for a report.
func (d *Dispatcher) reportGather() time.Duration {
	if d.holdsOrdered.Load() {
		return 0
	}
	return d.cfg.ReportGather
}

// noteOrdered records whether an owned group is ordered (holdsOrdered), after the
// owned groups changed.
func (d *Dispatcher) noteOrdered() {
	ordered := false
	for _, gs := range d.groups {
		if gs.g != nil && gs.g.Ordered {
			ordered = true
			break
		}
	}
	d.holdsOrdered.Store(ordered)
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
// store error) is sent again: ReturnBackoff doubling per return, at most 30 s.
func (d *Dispatcher) returnBackoff(returns int) time.Duration {
	b := d.cfg.ReturnBackoff << min(returns, 10)
	return min(b, 30*time.Second)
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
	d.observe(gs, r)
	if r.NextDueMS > 0 {
		gs.health.retryDueBy(time.UnixMilli(r.NextDueMS))
	}
	if len(r.DeadLettered) > 0 {
		d.outboxDue = true
		d.events.counted(gs, models.EventDeadLetterCreated, len(delivery.Expand(r.DeadLettered)), map[string]any{"last_error": gs.lastError})
	}
	if r.Retry {
		for _, rs := range [][]delivery.Range{r.Delivered, r.RetryWritten, r.DeadLettered} {
			for _, off := range delivery.Expand(rs) {
				delete(gs.retryThrottles, [2]int64{r.Queue, off})
			}
		}
		for _, off := range delivery.Expand(r.Returned[delivery.ReasonThrottled]) {
			gs.throttledRetry(r.Queue, off)
		}
		if js != nil {
			for _, rs := range [][]delivery.Range{r.Delivered, r.RetryWritten, r.DeadLettered} {
				for _, off := range delivery.Expand(rs) {
					delete(js.remaining, off)
				}
			}
			for _, rs := range r.Returned {
				for _, off := range delivery.Expand(rs) {
					delete(js.remaining, off)
				}
				gs.health.retryDueBy(d.now())
			}
			if r.Final || len(js.remaining) == 0 {
				d.finishJob(js, 0)
			}
		}
		return
	}
	cs := d.byGQ[[2]int64{r.Group, r.Queue}]
	if cs == nil || cs.version != r.Version {
		return
	}
	for _, rs := range [][]delivery.Range{r.Delivered, r.RetryWritten, r.DeadLettered} {
		for _, off := range delivery.Expand(rs) {
			if inf, ok := cs.inflight[off]; ok && inf.key != "" {
				cs.keyDone(off, inf.key)
			}
			cs.markDone(off)
			if cs.block != nil && cs.block.offset == off {
				cs.clearBlock() // the blocked head went out (or became a dead letter)
			}
		}
	}
	if js == nil {
		return
	}
	var back []pendingMsg
	for reason, rs := range r.Returned {
		if reason == delivery.ReasonFenced {
			// The cursor moved on (reset or takeover) and this owner has not seen it
			// yet: reload it; the fenced offsets belong to the new version.
			d.refresh = true
		}
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
				p.throttles++ // its POST was refused; MaxThrottles in a row make a failed attempt
			}
			if reason == delivery.ReasonBlocked {
				// Behind an ordered job's failed POST: the cursor's block holds them.
				back = append(back, p)
				continue
			}
			if reason.Backoff() {
				p.returns++
				p.notBefore = nowMS + d.returnBackoff(inf.returns).Milliseconds()
			} else {
				// Paused, probe, throttled, held or gone: the group's state holds them back; the short
				// delay only keeps a worker's stale view of the group from spinning.
				p.notBefore = nowMS + 200
			}
			d.wakeBy(time.UnixMilli(p.notBefore))
			back = append(back, p)
		}
	}
	if r.InPlace != nil && gs.g.OrderedByKey() {
		back = append(back, d.applyInPlaceKey(cs, js, r.InPlace)...)
	} else if r.InPlace != nil {
		back = append(back, d.applyInPlace(cs, js, r.InPlace)...)
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
