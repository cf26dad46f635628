package worker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

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

	offsets := delivery.Expand(j.Offsets)
	if !traceStart.IsZero() {
		for _, o := range offsets {
			stagetrace.Mark(stagetrace.WorkerStart, traceStart, j.Queue, o)
		}
	}
	if w.isStopping() {
		rep.returned(delivery.ReasonShutdown, offsets, delivery.Counters{})
		return
	}
	if !j.Retry {
		// One HGET per job: a reset or takeover since the job was cut fences it.
		stale, err := w.fences.Load(ctx, j.Group, j.Queue, j.Version)
		if err != nil {
			w.log.Warn("read cursor fence; sending the job", "task", rep.taskID, "err", err)
		}
		if stale {
			rep.returned(delivery.ReasonFenced, offsets, delivery.Counters{})
			return
		}
	} else if w.fences.Retired(j.Group, j.Queue) {
		rep.returned(delivery.ReasonFenced, offsets, delivery.Counters{}) // the group was deleted
		return
	}
	g, err := w.group(ctx, j.Group)
	if errors.Is(err, models.ErrNotFound) {
		// Deleted: nothing is sent; the returned messages have no cursor left to go to.
		rep.returned(delivery.ReasonFenced, offsets, delivery.Counters{})
		return
	}
	if err != nil {
		w.log.Warn("load group for job", "group", j.Group, "err", err)
		rep.returned(delivery.ReasonLoadFailed, offsets, delivery.Counters{})
		return
	}
	if w.paused(g) {
		rep.returned(delivery.ReasonPaused, offsets, delivery.Counters{})
		return
	}
	msgs := j.Carried(offsets)
	if msgs == nil {
		msgs, err = w.st.MessagesGet(ctx, j.Queue, offsets)
	}
	if err != nil {
		w.log.Warn("load messages for job", "group", j.Group, "queue", j.Queue, "err", err)
		rep.returned(delivery.ReasonLoadFailed, offsets, delivery.Counters{})
		return
	}
	if len(msgs) != len(offsets) {
		found := make(map[int64]bool, len(msgs))
		for _, m := range msgs {
			found[m.Offset] = true
		}
		var missing []int64
		for _, o := range offsets {
			if !found[o] {
				missing = append(missing, o)
			}
		}
		w.log.Warn("messages missing from queue table; counted as done", "queue", j.Queue, "count", len(missing))
		rep.delivered(missing, delivery.Counters{})
	}
	attempt := attemptsOf(j, offsets)
	run := &jobRun{w: w, g: g, topic: w.topic(ctx, j.Queue), job: j, attempt: attempt, rep: rep}
	batches := splitJob(j, offsets, msgs, g.BatchSize, g.BatchMaxBytes)
	if j.Probe && len(batches) > 1 {
		for _, b := range batches[1:] {
			rep.returned(delivery.ReasonProbe, offsetsOf(b), delivery.Counters{})
		}
		batches = batches[:1]
	}
	work := make(chan []models.Message)
	var wg sync.WaitGroup
	sender := func(slot bool) {
		wg.Go(func() {
			if slot {
				defer w.slots.Give()
			}
			for b := range work {
				// A POST starts only once its predecessors' outcomes are durable (a local
				// job's copies, report.go): what a kill repeats stays within the job's
				// parallelism.
				run.rep.awaitCopies(true)
				run.send(ctx, b)
			}
		})
	}
	sender(false) // on the job's own slot
	senders, most := 1, min(j.Parallelism, len(batches))
	i := 0
feed:
	for ; i < len(batches); i++ {
		if run.stopReason() != "" || w.isStopping() {
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
	if r := run.stopReason(); r != "" {
		reason = r
	}
	for ; i < len(batches); i++ {
		rep.returned(reason, offsetsOf(batches[i]), delivery.Counters{})
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

func (r *jobRun) stopReason() delivery.Reason {
	if s, ok := r.stop.Load().(string); ok {
		return delivery.Reason(s)
	}
	return ""
}

func (r *jobRun) send(ctx context.Context, b []models.Message) {
	offsets := offsetsOf(b)
	if ctx.Err() != nil || r.w.isStopping() {
		r.rep.returned(delivery.ReasonShutdown, offsets, delivery.Counters{})
		return
	}
	if (!r.job.Retry && r.w.fences.Stale(r.job.Group, r.job.Queue, r.job.Version)) || r.w.fences.Retired(r.job.Group, r.job.Queue) {
		r.stop.Store(string(delivery.ReasonFenced)) // in memory: no Redis command per POST
	} else if r.w.paused(r.g) {
		r.stop.Store(string(delivery.ReasonPaused)) // a pause answered: no POST starts after it
	}
	if s := r.stopReason(); s != "" {
		r.rep.returned(s, offsets, delivery.Counters{})
		return
	}
	wid := webhookID(r.g, b)
	start := time.Now()
	// A POST already started finishes even during shutdown (its timeout_ms bounds it),
	// so its outcome is known and reported.
	out, excerpt := r.w.post(context.WithoutCancel(ctx), r.g, r.topic, r.attempt, b)
	lat := time.Since(start)
	ms := lat.Milliseconds()
	name := r.g.Name
	metrics.PostLatency.WithLabelValues(name).Observe(lat.Seconds())
	c := delivery.Counters{LastStatus: out.Status, LatencySumMS: ms, LatencyMaxMS: ms}
	if out.Kind == webhook.KindThrottled {
		// The group pauses for Retry-After either way; a message throttled
		// MaxThrottles times in a row counts this POST as its failed attempt.
		c.Throttles, c.RetryAfterMS = 1, out.RetryAfter.Milliseconds()
		if r.lastThrottle(b) {
			out = webhook.Outcome{Kind: webhook.KindFailed, Status: out.Status, Class: delivery.ClassHTTPStatus}
			r.stop.Store(string(delivery.ReasonHeld))
		}
	}
	switch out.Kind {
	case webhook.KindThrottled, webhook.KindGone:
		reason, stop := delivery.ReasonThrottled, delivery.ReasonHeld
		if out.Kind == webhook.KindGone {
			reason, stop, c.Gone = delivery.ReasonGone, delivery.ReasonGone, true
		}
		c.LastError = out.String()
		r.stop.Store(string(stop))
		r.rep.returned(reason, offsets, c)
		r.w.recordAttempts(r.g, wid, b, r.attempt, out, ms, excerpt)
		return
	}
	failedIDs := map[string]bool{}
	if out.Kind == webhook.KindFailed {
		for _, m := range b {
			failedIDs[models.MessageID(m.QueueID, m.Offset)] = true
		}
	}
	for _, id := range out.Failed {
		failedIDs[id] = true
	}
	var ok []int64
	var okMsgs, failMsgs []models.Message
	var fails []store.Failure
	for _, m := range b {
		if failedIDs[models.MessageID(m.QueueID, m.Offset)] {
			fails = append(fails, store.Failure{QueueID: m.QueueID, Offset: m.Offset, Attempt: r.attempt(m.Offset), LastStatus: out.Status, LastError: out.String()})
			failMsgs = append(failMsgs, m)
		} else {
			ok = append(ok, m.Offset)
			okMsgs = append(okMsgs, m)
		}
	}
	if len(fails) == 0 {
		c.Successes, c.Delivered = 1, len(ok)
		now := time.Now().UnixMilli()
		metrics.Delivered.WithLabelValues(name).Add(float64(len(ok)))
		e2e := metrics.EndToEnd.WithLabelValues(name)
		for _, m := range b {
			e2e.Observe(float64(now-m.CreatedAt) / 1000)
		}
		r.rep.delivered(ok, c)
		r.w.recordAttempts(r.g, wid, b, r.attempt, webhook.Outcome{Kind: webhook.KindDelivered, Status: out.Status}, ms, nil)
		return
	}
	if r.job.Ordered {
		r.failOrdered(ctx, b, failedIDs, out, c, wid, ms, excerpt)
		return
	}
	c.Failures, c.TailFailures, c.FailedMsgs, c.LastError = 1, 1, len(fails), out.String()
	metrics.Failed.WithLabelValues(name, string(out.Class)).Add(float64(len(fails)))
	// A partial answer is a failed attempt for the messages it named only.
	r.w.recordAttempts(r.g, wid, failMsgs, r.attempt, out, ms, excerpt)
	r.w.recordAttempts(r.g, wid, okMsgs, r.attempt, webhook.Outcome{Kind: webhook.KindDelivered, Status: out.Status}, ms, nil)
	res, err := r.w.st.RetryRecord(context.WithoutCancel(ctx), r.g.ID, r.g.MaxAttempts, r.g.RetrySchedule, fails)
	if err != nil {
		// Not recorded: hand the messages back; they are sent again, never lost.
		r.w.log.Warn("write retry rows", "group", r.g.ID, "err", err)
		c.Failures, c.TailFailures = 0, 0
		r.rep.returned(delivery.ReasonRecordFailed, offsetsOf(b), c)
		return
	}
	if len(ok) > 0 {
		r.rep.delivered(ok, delivery.Counters{Delivered: len(ok)})
	}
	r.rep.failed(res.Retried, res.DeadLettered, res.NextDue, c)
}

// lastThrottle reports whether b carries a message whose next throttle is its
// MaxThrottles-th in a row (the job's LastThrottle).
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
