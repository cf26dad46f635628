package worker

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/webhook"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// failOrdered handles a failed POST of an ordered job (ordered groups):
// the messages before the earliest failed one are delivered; that one and the rest
// of the batch are retried in place (reported as InPlace, due after the group's
// retry schedule) and the job stops, its later batches returned as blocked. When
// the attempt was the group's max_attempts, ordered_on_exhausted decides: pause
// reports the queue paused on them; dead_letter makes the first failed message a
// dead letter (written before the report) and hands the others back to be sent
// again from attempt 1. In a group ordered by key a POST may carry several keys:
// dead_letter then makes each key's first failed message a dead letter (every key
// of the POST exhausted its attempts on it). No retry row is written: ordered
// groups do not use the retry topic.
func (r *jobRun) failOrdered(ctx context.Context, b []models.Message, failedIDs map[string]bool, out webhook.Outcome, c delivery.Counters, wid string, ms int64, excerpt []byte) {
	r.stop.Store(string(delivery.ReasonBlocked))
	k := 0
	for k < len(b) && !failedIDs[models.MessageID(b[k].QueueID, b[k].Offset)] {
		k++
	}
	okMsgs, failed := b[:k], b[k:]
	c.Failures, c.TailFailures, c.FailedMsgs, c.LastError = 1, 1, len(failed), out.String()
	c.Repeats = repeats(failed, r.attempt)
	metrics.Failed.WithLabelValues(r.g.Name, string(out.Class)).Add(float64(len(failed)))
	r.w.recordAttempts(r.g, wid, failed, r.attempt, out, ms, excerpt)
	if len(okMsgs) > 0 {
		r.w.recordAttempts(r.g, wid, okMsgs, r.attempt, webhook.Outcome{Kind: webhook.KindDelivered, Status: out.Status}, ms, nil)
		r.rep.delivered(offsetsOf(okMsgs), delivery.Counters{Delivered: len(okMsgs)})
	}
	head := failed[0]
	attempt := r.attempt(head.Offset)
	if attempt >= r.g.MaxAttempts && r.g.OrderedOnExhausted != models.OnExhaustedPause {
		heads, rest := exhaustedHeads(failed, r.g.OrderedByKey())
		fs := make([]store.Failure, len(heads))
		for i, m := range heads {
			fs[i] = store.Failure{QueueID: m.QueueID, Offset: m.Offset, Attempt: attempt, LastStatus: out.Status, LastError: out.String()}
		}
		res, err := r.w.st.RetryRecord(context.WithoutCancel(ctx), r.g.ID, attempt, r.g.RetrySchedule, fs)
		if err != nil {
			r.w.log.Warn("write ordered dead letter", "group", r.g.ID, "err", err)
			c.Failures, c.TailFailures, c.Repeats = 0, 0, 0
			r.rep.returned(delivery.ReasonRecordFailed, offsetsOf(failed), c)
			return
		}
		r.rep.failed(nil, res.DeadLettered, time.Time{}, c)
		r.rep.returned(delivery.ReasonBlocked, offsetsOf(rest), delivery.Counters{})
		return
	}
	ip := &delivery.InPlace{Offsets: delivery.Ranges(offsetsOf(failed)), Attempt: attempt, LastError: out.String()}
	if attempt >= r.g.MaxAttempts {
		ip.Paused = true
	} else {
		ip.AtMS = time.Now().Add(models.RetryDelay(r.g.RetrySchedule, attempt+1)).UnixMilli()
	}
	r.rep.retryInPlace(ip, c)
}

// retryInPlace records an ordered job's failed POST to be sent again in place.
func (r *reporter) retryInPlace(ip *delivery.InPlace, c delivery.Counters) {
	r.mu.Lock()
	r.inPlace = ip
	r.add(c)
	r.mu.Unlock()
}

// exhaustedHeads splits the failed messages of an ordered POST whose attempts are
// exhausted into those that become dead letters and those sent again from attempt
// 1: the first failed message, or, ordered by key (byKey), each key's first.
func exhaustedHeads(failed []models.Message, byKey bool) (heads, rest []models.Message) {
	if !byKey {
		return failed[:1], failed[1:]
	}
	seen := map[string]bool{}
	for _, m := range failed {
		if !seen[m.Key] {
			seen[m.Key] = true
			heads = append(heads, m)
			continue
		}
		rest = append(rest, m)
	}
	return heads, rest
}
