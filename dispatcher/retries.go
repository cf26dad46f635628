package dispatcher

import (
	"context"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
)

// retriesWaiting reports whether due retry rows are known to wait (a full claim or a
// due time that has come), so they count as a busy flow when credits are shared.
func (gs *groupState) retriesWaiting(now time.Time) bool {
	return !gs.health.nextRetry.IsZero() && !now.Before(gs.health.nextRetry)
}

// claimRetries claims up to n due rows of the group (fewer under its rate) and
// enqueues them as retry jobs, one per queue, each with its share of the free credits
// (the retry topic is one flow of the group's rotation, so retries and first
// deliveries share tokens and credits in turn; one group's retries never wait on
// another's, claims are per group). Rows of queues left without a credit are released
// due at once. It reports whether it enqueued any job.
func (d *Dispatcher) claimRetries(ctx context.Context, gs *groupState, now time.Time, n int, probe bool) bool {
	if gs.inflightP >= gs.g.MaxInFlight {
		return false
	}
	n = gs.jobMessages(n, true)
	want := n
	if n = gs.pace.allow(now, n); n < 1 {
		d.wakeBy(gs.pace.next(now, want))
		return false
	}
	d.claimSeq++
	token := d.id + ":" + strconv.FormatInt(d.claimSeq, 10)
	lease := d.jobLifetime(gs.g, n, 1) // covers the deadline of every job cut from the rows
	rows, err := d.sched.RetryClaim(ctx, gs.g.ID, token, lease, n)
	if err != nil {
		d.log.Warn("claim retries", "group", gs.g.Name, "err", err)
		gs.health.nextRetry = now.Add(time.Second)
		return false
	}
	if len(rows) < n {
		next, err := d.sched.RetryNextDue(ctx, gs.g.ID)
		switch {
		case err != nil:
			next = now.Add(time.Second)
		case next.IsZero():
			next = now.Add(time.Hour) // none waiting; reports and redrives move this up
		}
		gs.health.nextRetry = next
		d.wakeBy(next)
	} else {
		gs.health.nextRetry = now // a full claim: more may be due
	}
	if len(rows) == 0 {
		return false
	}
	byQueue := map[int64][]int{}
	var order []int64
	for i, r := range rows {
		if _, ok := byQueue[r.QueueID]; !ok {
			order = append(order, r.QueueID)
		}
		byQueue[r.QueueID] = append(byQueue[r.QueueID], i)
	}
	enqueued := false
	for k, q := range order {
		idx := byQueue[q]
		offsets := make([]int64, len(idx))
		attempts := make([]int, len(idx))
		var keys []int64 // batch keys matter only when POSTs carry several messages
		if gs.g.BatchSize > 1 {
			keys = make([]int64, len(idx))
		}
		for i, r := range idx {
			offsets[i], attempts[i] = rows[r].Offset, rows[r].Attempt
			if keys != nil {
				keys[i] = rows[r].FailedAt.UnixMilli()
			}
		}
		posts := (len(offsets) + gs.g.BatchSize - 1) / gs.g.BatchSize
		p := gs.credits(posts, k < len(order)-1)
		if p < 1 {
			// No credit left for this queue's rows: due again at once, for a later turn.
			if err := d.sched.RetryRelease(ctx, gs.g.ID, q, offsets, 0); err != nil {
				d.log.Warn("release retry rows", "group", gs.g.Name, "err", err)
			}
			gs.health.retryDueBy(now)
			continue
		}
		// Rows come ordered by offset within a queue, so Attempts aligns with Expand(Ranges).
		// A retry job's "version" is its claim number, unique per dispatcher run (seeded
		// from the clock), so its TaskID never collides with another claim's.
		j := delivery.Job{Group: gs.g.ID, Queue: q, Version: d.claimSeq, Owner: d.id, Offsets: delivery.Ranges(offsets), Parallelism: p,
			Retry: true, Attempts: attempts, BatchKeys: keys, Probe: probe, LastThrottle: gs.retryLastThrottle(q, offsets)}
		if !d.startJob(ctx, &jobState{job: j, group: gs, leaseEnd: now.Add(lease)}, nil, now) {
			continue
		}
		gs.pace.take(len(offsets))
		enqueued = true
	}
	return enqueued
}

// maxRetryThrottles bounds retryThrottles per group: past it the counts start over
// (each message still fails after at most its group's MaxThrottles more throttles).
const maxRetryThrottles = 10000

// throttledRetry counts one more throttled POST of a retry row.
func (gs *groupState) throttledRetry(queue, off int64) {
	if gs.retryThrottles == nil || len(gs.retryThrottles) >= maxRetryThrottles {
		gs.retryThrottles = map[[2]int64]int{}
	}
	gs.retryThrottles[[2]int64{queue, off}]++
}

// retryLastThrottle returns, as ranges, the offsets of queue's claimed rows whose
// next throttle is their group's MaxThrottles-th in a row, or nil (retry jobs never
// bisect: delivery.ThrottleLimit at batch 1).
func (gs *groupState) retryLastThrottle(queue int64, offsets []int64) []delivery.Range {
	var last []int64
	for _, o := range offsets {
		if gs.retryThrottles[[2]int64{queue, o}] >= delivery.ThrottleLimit(gs.g.MaxThrottles, 1)-1 {
			last = append(last, o)
		}
	}
	if len(last) == 0 {
		return nil
	}
	return delivery.Ranges(last)
}

// askOutbox wakes the maintenance role's dead-letter outbox after a dead-letter
// report, at most once per poll. The outbox notifies the dead-letter queues it
// appended to, which wakes the cursors reading them (onEvent).
func (d *Dispatcher) askOutbox(ctx context.Context) {
	if !d.outboxDue {
		return
	}
	d.outboxDue = false
	if err := d.notifier.DeadLetters(ctx); err != nil {
		d.log.Warn("wake the dead-letter outbox; its interval covers it", "err", err)
	}
}
