package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/stagetrace"
	"github.com/heraldhq/herald/internal/webhook"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// heartbeatDelay is how long a job runs before its heartbeat goroutine starts
// (progress reports and fence flushes; see reporter.heartbeat).
const heartbeatDelay = 100 * time.Millisecond

// ReturnJob is the bus.Runner's: j's messages go back unsent (ReasonShutdown), the
// worker stopped before a slot was free for it.
func (w *Worker) ReturnJob(j delivery.Job) {
	rep := newReporter(w, j)
	rep.returned(delivery.ReasonShutdown, delivery.Expand(j.Offsets), delivery.Counters{})
	rep.flush(true)
}

// RunJob is the bus.Runner's: it runs job j on the slot its source took, until the
// job's final report is flushed: fence and group checks, messages (carried or
// loaded), batches sent with at most j.Parallelism POSTs at once (each beyond the
// first on a further slot, when one is free), and every outcome reported.
func (w *Worker) RunJob(ctx context.Context, j delivery.Job) {
	traceStart := stagetrace.Now()
	rep := newReporter(w, j)
	hbCtx, stopHB := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHB()
	// A job that ends within heartbeatDelay (most live jobs) never starts its
	// heartbeat goroutine: its final report covers progress, and a takeover waits
	// longer than that (250 ms) for a fenced job's flush.
	hb := time.AfterFunc(heartbeatDelay, func() { rep.heartbeat(hbCtx, w.cfg.ProgressInterval) })
	defer hb.Stop()
	defer rep.flush(true)

	s := &jobStart{job: j, offsets: delivery.Expand(j.Offsets), rep: rep}
	if !traceStart.IsZero() {
		for _, o := range s.offsets {
			stagetrace.Mark(stagetrace.WorkerStart, traceStart, j.Queue, o)
		}
	}
	if reason := w.startGates(ctx, s); reason != "" {
		rep.returned(reason, s.offsets, delivery.Counters{})
		return
	}
	run := &jobRun{w: w, g: s.g, topic: w.topic(ctx, j.Queue), job: j, attempt: attemptsOf(j, s.offsets), rep: rep}
	size := s.g.BatchSize
	if j.Batch > 0 && j.Batch < size {
		size = j.Batch // a bisected batch (delivery.ThrottleLimit)
	}
	batches := splitJob(j, s.offsets, s.msgs, size, s.g.BatchMaxBytes)
	if j.Probe && len(batches) > 1 {
		for _, b := range batches[1:] {
			rep.returned(delivery.ReasonProbe, offsetsOf(b), delivery.Counters{})
		}
		batches = batches[:1]
	}
	run.sendAll(ctx, batches)
}

// sendAll sends batches with at most the job's parallelism of POSTs at once: the
// first on the job's own slot, each further one on a slot taken when free. What a
// stop (the job's, or the worker's) leaves unsent goes back with its reason.
func (r *jobRun) sendAll(ctx context.Context, batches [][]models.Message) {
	w := r.w
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	r.rep.expect(n)
	work := make(chan []models.Message)
	var wg sync.WaitGroup
	sender := func(slot bool) {
		wg.Go(func() {
			if slot {
				defer w.slots.Give()
			}
			for b := range work {
				// A POST starts only once its predecessors' outcomes are durable (a local
				// job's copies, another owner's progress reports; report.go): what a kill
				// or a stall repeats stays within the job's parallelism.
				r.rep.awaitCopies(true)
				r.send(ctx, b)
			}
		})
	}
	sender(false) // on the job's own slot
	senders, most := 1, min(r.job.Parallelism, len(batches))
	i := 0
feed:
	for ; i < len(batches); i++ {
		if r.stopReason() != "" || w.isStopping() {
			break
		}
		if senders < most && w.slots.TryTake() {
			sender(true)
			senders++
		}
		select {
		case work <- batches[i]:
		case <-ctx.Done():
			break feed
		case <-w.stopping:
			break feed
		}
	}
	close(work)
	wg.Wait()
	reason := delivery.ReasonShutdown
	if s := r.stopReason(); s != "" {
		reason = s
	}
	for ; i < len(batches); i++ {
		r.rep.returned(reason, offsetsOf(batches[i]), delivery.Counters{})
	}
}

// paused reports whether group g sends nothing: its status as the later of its
// status fence (announced or read at the job's start) and the cached row says, so a
// pause stops POSTs at once and a resume whose fence was lost applies within the
// group cache. A map read, no Redis command.
func (w *Worker) paused(g *cachedGroup) bool {
	if v, p, ok := w.fences.Status(g.ID); ok && v >= g.ConfigVersion {
		return p
	}
	return g.Status != models.GroupRunning
}

// attemptsOf returns each offset's attempt number: the job's for first deliveries,
// the retry row's for retry jobs.
func attemptsOf(j delivery.Job, offsets []int64) func(int64) int {
	if !j.Retry || len(j.Attempts) != len(offsets) {
		return func(int64) int { return max(j.Attempt, 1) }
	}
	m := make(map[int64]int, len(offsets))
	for i, o := range offsets {
		m[o] = j.Attempts[i]
	}
	return func(o int64) int { return m[o] }
}

// jobRun is one job's sending state shared by its parallel POSTs.
type jobRun struct {
	w       *Worker
	g       *cachedGroup
	topic   string
	job     delivery.Job
	attempt func(int64) int
	rep     *reporter
	stop    atomic.Value // delivery.Reason as string: a throttle (held), a 410 or a fence stops the job
}

// stopReason is why the job stopped sending ("" while it goes on).
func (r *jobRun) stopReason() delivery.Reason {
	if s, ok := r.stop.Load().(string); ok {
		return delivery.Reason(s)
	}
	return ""
}

// send POSTs batch b once the post gates let it, and reports the outcome: refused
// (throttled, gone), delivered, or failed in part or whole.
func (r *jobRun) send(ctx context.Context, b []models.Message) {
	if reason := r.sendGates(ctx); reason != "" {
		r.rep.returned(reason, offsetsOf(b), delivery.Counters{})
		return
	}
	wid := webhookID(r.g, b)
	start := time.Now()
	// A POST already started finishes even during shutdown (its timeout_ms bounds it),
	// so its outcome is known and reported.
	out, excerpt := r.w.post(context.WithoutCancel(ctx), r.g, r.topic, r.attempt, b)
	lat := time.Since(start)
	ms := lat.Milliseconds()
	metrics.PostLatency.WithLabelValues(r.g.Name).Observe(lat.Seconds())
	p := postDone{wid: wid, b: b, out: out, ms: ms, excerpt: excerpt, c: delivery.Counters{LastStatus: out.Status, LatencySumMS: ms, LatencyMaxMS: ms}}
	if out.Kind == webhook.KindThrottled {
		// The group pauses for Retry-After either way; a message throttled its
		// group's limit of times in a row (the job's LastThrottle) counts this POST
		// as its failed attempt.
		p.c.Throttles, p.c.RetryAfterMS = 1, out.RetryAfter.Milliseconds()
		if r.lastThrottle(b) {
			p.out = webhook.Outcome{Kind: webhook.KindFailed, Status: out.Status, Class: delivery.ClassHTTPStatus}
			r.stop.Store(string(delivery.ReasonHeld))
		}
	}
	switch p.out.Kind {
	case webhook.KindThrottled, webhook.KindGone:
		r.refused(p)
		return
	}
	p.split(r.attempt)
	if len(p.fails) == 0 {
		r.delivered(p)
		return
	}
	r.failed(ctx, p)
}

// postDone is one POST's outcome as send handles it: the batch b, split by split
// into the messages delivered and those failed (as retry rows to write).
type postDone struct {
	wid      string
	b        []models.Message
	out      webhook.Outcome
	ms       int64
	excerpt  []byte
	c        delivery.Counters
	failed   map[string]bool // message ids the outcome failed
	ok       []int64
	okMsgs   []models.Message
	failMsgs []models.Message
	fails    []store.Failure
}

// split sorts the batch by the outcome: all failed (a failed POST), or those a
// partial answer named (out.Failed), the rest delivered.
func (p *postDone) split(attempt func(int64) int) {
	p.failed = map[string]bool{}
	if p.out.Kind == webhook.KindFailed {
		for _, m := range p.b {
			p.failed[models.MessageID(m.QueueID, m.Offset)] = true
		}
	}
	for _, id := range p.out.Failed {
		p.failed[id] = true
	}
	for _, m := range p.b {
		if p.failed[models.MessageID(m.QueueID, m.Offset)] {
			p.fails = append(p.fails, store.Failure{QueueID: m.QueueID, Offset: m.Offset, Attempt: attempt(m.Offset), LastStatus: p.out.Status, LastError: p.out.String()})
			p.failMsgs = append(p.failMsgs, m)
		} else {
			p.ok = append(p.ok, m.Offset)
			p.okMsgs = append(p.okMsgs, m)
		}
	}
}

// refused handles a throttled POST (the group holds until Retry-After) or a 410
// (the group is disabled): the job stops, its messages go back.
func (r *jobRun) refused(p postDone) {
	reason, stop := delivery.ReasonThrottled, delivery.ReasonHeld
	if p.out.Kind == webhook.KindGone {
		reason, stop, p.c.Gone = delivery.ReasonGone, delivery.ReasonGone, true
	}
	p.c.LastError = p.out.String()
	r.stop.Store(string(stop))
	r.rep.returned(reason, offsetsOf(p.b), p.c)
	r.w.recordAttempts(r.g, p.wid, p.b, r.attempt, p.out, p.ms, p.excerpt)
}

// delivered handles a POST whose every message was delivered.
func (r *jobRun) delivered(p postDone) {
	name := r.g.Name
	p.c.Successes, p.c.Delivered = 1, len(p.ok)
	now := time.Now().UnixMilli()
	metrics.Delivered.WithLabelValues(name).Add(float64(len(p.ok)))
	e2e := metrics.EndToEnd.WithLabelValues(name)
	for _, m := range p.b {
		e2e.Observe(float64(now-m.CreatedAt) / 1000)
	}
	r.rep.delivered(p.ok, p.c)
	r.w.recordAttempts(r.g, p.wid, p.b, r.attempt, webhook.Outcome{Kind: webhook.KindDelivered, Status: p.out.Status}, p.ms, nil)
}

// failed handles a POST with failed messages: an ordered job stops at them
// (failOrdered); otherwise each gets a retry row (or a dead letter) and the
// delivered rest are reported. A row that cannot be written sends the whole batch
// back, never lost.
func (r *jobRun) failed(ctx context.Context, p postDone) {
	if bus.Lapsed(ctx) {
		// This worker stopped with the POST open and the job went elsewhere meanwhile:
		// the failure (often the POST's own timeout, run out while stopped) is the new
		// generation's to find, so no retry row is written and no attempt counted.
		if len(p.ok) > 0 {
			r.rep.delivered(p.ok, delivery.Counters{Delivered: len(p.ok)})
		}
		r.rep.returned(delivery.ReasonShutdown, offsetsOf(p.failMsgs), delivery.Counters{})
		return
	}
	if r.job.Ordered {
		r.failOrdered(ctx, p.b, p.failed, p.out, p.c, p.wid, p.ms, p.excerpt)
		return
	}
	c := p.c
	c.Failures, c.TailFailures, c.FailedMsgs, c.LastError = 1, 1, len(p.fails), p.out.String()
	c.Repeats = repeats(p.failMsgs, r.attempt)
	metrics.Failed.WithLabelValues(r.g.Name, string(p.out.Class)).Add(float64(len(p.fails)))
	// A partial answer is a failed attempt for the messages it named only.
	r.w.recordAttempts(r.g, p.wid, p.failMsgs, r.attempt, p.out, p.ms, p.excerpt)
	r.w.recordAttempts(r.g, p.wid, p.okMsgs, r.attempt, webhook.Outcome{Kind: webhook.KindDelivered, Status: p.out.Status}, p.ms, nil)
	res, err := r.w.st.RetryRecord(context.WithoutCancel(ctx), r.g.ID, r.g.MaxAttempts, r.g.RetrySchedule, p.fails)
	if err != nil {
		// Not recorded: hand the messages back; they are sent again, never lost.
		r.w.log.Warn("write retry rows", "group", r.g.ID, "err", err)
		c.Failures, c.TailFailures, c.Repeats = 0, 0, 0
		r.rep.returned(delivery.ReasonRecordFailed, offsetsOf(p.b), c)
		return
	}
	if len(p.ok) > 0 {
		r.rep.delivered(p.ok, delivery.Counters{Delivered: len(p.ok)})
	}
	r.rep.failed(res.Retried, res.DeadLettered, res.NextDue, c)
}

// repeats is a failed POST's Counters.Repeats: 1 when every failed message of it had
// been tried before (attempt > 1), else 0.
func repeats(failed []models.Message, attempt func(int64) int) int {
	for _, m := range failed {
		if attempt(m.Offset) <= 1 {
			return 0
		}
	}
	return 1
}

// lastThrottle reports whether b holds a message whose next throttle is its
// limit-th in a row (the job's LastThrottle; delivery.ThrottleLimit).
func (r *jobRun) lastThrottle(b []models.Message) bool {
	for _, m := range b {
		for _, rg := range r.job.LastThrottle {
			if m.Offset >= rg[0] && m.Offset <= rg[1] {
				return true
			}
		}
	}
	return false
}

func offsetsOf(b []models.Message) []int64 {
	out := make([]int64, len(b))
	for i, m := range b {
		out[i] = m.Offset
	}
	return out
}
