package dispatcher

import (
	"context"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
)

// cutRetries claims a group's due retry rows when credits allow. While first
// deliveries wait, retries use at most half the group's credits, so neither starves
// the other; one group's retries never wait on another's (claims are per group).
func (d *Dispatcher) cutRetries(ctx context.Context, gs *groupState, now time.Time) {
	if now.Before(gs.nextRetry) {
		return
	}
	limit := gs.g.MaxInFlight
	for _, cs := range gs.cursors {
		if len(cs.pending) > 0 {
			limit = max(1, gs.g.MaxInFlight/2)
			break
		}
	}
	for gs.inflightP < limit && d.claimRetries(ctx, gs, now, d.cfg.JobSize, false) {
	}
}

// claimRetries claims up to n due rows of the group (fewer under its rate) and
// enqueues them as retry jobs, one per queue. It reports whether it enqueued any.
func (d *Dispatcher) claimRetries(ctx context.Context, gs *groupState, now time.Time, n int, probe bool) bool {
	if n = gs.tokens(now, n); n < 1 {
		d.wakeBy(gs.nextToken(now))
		return false
	}
	d.claimSeq++
	token := d.id + ":" + strconv.FormatInt(d.claimSeq, 10)
	lease := d.cfg.JobDeadlineBase + time.Duration(gs.g.TimeoutMS)*time.Millisecond*time.Duration(1+n/max(gs.g.BatchSize, 1))
	rows, err := d.st.RetryClaim(ctx, gs.g.ID, token, lease, n)
	if err != nil {
		d.log.Warn("claim retries", "group", gs.g.Name, "err", err)
		gs.nextRetry = now.Add(time.Second)
		return false
	}
	if len(rows) < n {
		next, err := d.st.RetryNextDue(ctx, gs.g.ID)
		switch {
		case err != nil:
			next = now.Add(time.Second)
		case next.IsZero():
			next = now.Add(time.Hour) // none waiting; reports and redrives move this up
		}
		gs.nextRetry = next
		d.wakeBy(next)
	}
	if len(rows) == 0 {
		return false
	}
	gs.limiter.AllowN(now, len(rows))
	byQueue := map[int64][]int{}
	var order []int64
	for i, r := range rows {
		if _, ok := byQueue[r.QueueID]; !ok {
			order = append(order, r.QueueID)
		}
		byQueue[r.QueueID] = append(byQueue[r.QueueID], i)
	}
	for _, q := range order {
		idx := byQueue[q]
		offsets := make([]int64, len(idx))
		attempts := make([]int, len(idx))
		var keys []int64 // batch keys matter only when POSTs carry several messages
		if gs.g.BatchSize > 1 {
			keys = make([]int64, len(idx))
		}
		for i, k := range idx {
			offsets[i], attempts[i] = rows[k].Offset, rows[k].Attempt
			if keys != nil {
				keys[i] = rows[k].FailedAt.UnixMilli()
			}
		}
		posts := (len(offsets) + gs.g.BatchSize - 1) / gs.g.BatchSize
		p := max(1, min(posts, gs.g.MaxInFlight-gs.inflightP, max(1, (gs.g.MaxInFlight+1)/2)))
		// Rows come ordered by offset within a queue, so Attempts aligns with Expand(Ranges).
		// A retry job's "version" is its claim number, unique per dispatcher run (seeded
		// from the clock), so its TaskID never collides with another claim's.
		j := delivery.Job{Group: gs.g.ID, Queue: q, Version: d.claimSeq, Owner: d.id, Offsets: delivery.Ranges(offsets), Parallelism: p,
			Retry: true, Attempts: attempts, BatchKeys: keys, Probe: probe}
		js := &jobState{job: j, group: gs, remaining: make(map[int64]bool, len(offsets))}
		for _, o := range offsets {
			js.remaining[o] = true
		}
		gs.inflightP += p
		d.jobs[j.TaskID()] = js
		if err := d.enqueue(ctx, js, now); err != nil {
			d.log.Warn("enqueue retry job", "task", j.TaskID(), "err", err)
			delete(d.jobs, j.TaskID())
			gs.inflightP -= p
		}
	}
	return true
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
