package maintenance

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// Delayed delivery: the leader moves parked messages into their topics' queues.
const (
	// delayedBatch is how many parked messages one pass reads at most; a pass that
	// moved a full batch runs again at once.
	delayedBatch = 500
	// delayedAhead is how far ahead a pass reads parked messages, so the next due
	// time is usually known from the same SELECT.
	delayedAhead = time.Second
	// delayedRecheck bounds how long the leader waits without a pass: a lost
	// notification (notify.Notifier.Delayed) delays a message at most this much.
	delayedRecheck = time.Minute
	// delayedRetry is the wait after a failed read, and a follower's between checks
	// of whether it became the leader (no statement).
	delayedRetry = time.Second
)

// runDelayed fires the schedules that are due (schedules.go), which parks their
// messages, then moves the parked messages that are due into their topics' queues,
// and returns when to run again: at the next due time or schedule tick, at once
// after a full batch, at most delayedRecheck later. Only the leader works; a new
// parked message or schedule earlier than that wakes it (Run, on its
// notification), so an idle leader issues no statement between rechecks.
func (m *Maintainer) runDelayed(ctx context.Context) time.Duration {
	if !m.Leader() {
		return delayedRetry
	}
	defer m.TestSignals.DutyRan.Signal(DutyDelayed)
	now := m.now()
	tick, again := m.fireSchedules(ctx, now)
	wait := m.moveDue(ctx, now)
	if again {
		return 0
	}
	if !tick.IsZero() {
		wait = min(wait, max(tick.Sub(m.now()), 0))
	}
	return wait
}

// moveDue moves the parked messages due at now and returns when to look again.
func (m *Maintainer) moveDue(ctx context.Context, now time.Time) time.Duration {
	parked, err := m.st.DelayedDue(ctx, now.Add(delayedAhead), delayedBatch)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("read delayed messages", "err", err)
		}
		return delayedRetry
	}
	var due []models.DelayedMessage
	var later *models.DelayedMessage
	for i, d := range parked {
		if d.DeliverAt.After(now) {
			later = &parked[i] // read earliest first: the rest are later still
			break
		}
		due = append(due, d)
	}
	if len(due) > 0 {
		m.moveDelayed(ctx, due, now)
	}
	switch {
	case len(due) == delayedBatch:
		return 0
	case later != nil:
		return later.DeliverAt.Sub(now)
	}
	next, ok, err := m.st.DelayedNext(ctx)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			m.log.Warn("read the next delayed message's time", "err", err)
		}
		return delayedRetry
	case !ok:
		return delayedRecheck
	}
	return min(max(next.Sub(m.now()), 0), delayedRecheck)
}

// moveDelayed moves due (parked messages, earliest first) into their topics'
// queues, one transaction per topic that also deletes their parked rows (an XA
// transaction when the queues live on another db node), then notifies the queues
// written. A keyed message goes to its key's queue, a keyless one to a writable
// queue; each becomes an ordinary message created now. A topic deleted meanwhile
// drops its parked messages; one whose queues refuse writes now (a move sealing
// them, a db node down) keeps them for the next pass.
func (m *Maintainer) moveDelayed(ctx context.Context, due []models.DelayedMessage, now time.Time) {
	byTopic := map[int64][]models.DelayedMessage{}
	var order []int64
	for _, d := range due {
		if _, seen := byTopic[d.TopicID]; !seen {
			order = append(order, d.TopicID)
		}
		byTopic[d.TopicID] = append(byTopic[d.TopicID], d)
	}
	var written []int64
	for _, id := range order {
		t, err := m.st.TopicGetByID(ctx, id)
		if errors.Is(err, models.ErrNotFound) {
			m.dropDelayed(ctx, byTopic[id])
			continue
		}
		if err != nil {
			m.log.Warn("read a delayed message's topic", "topic", id, "err", err)
			continue
		}
		pr := delayedRequest(t, byTopic[id], now)
		if pr == nil {
			continue
		}
		err = m.st.MessagesInsert(ctx, []*store.PublishRequest{pr})
		if errors.Is(err, models.ErrConflict) && len(pr.Parked) > 1 {
			// Some were cancelled meanwhile: move the others one by one.
			for _, one := range splitRequest(pr) {
				if err := m.st.MessagesInsert(ctx, []*store.PublishRequest{one}); err == nil {
					written = append(written, one.Messages[0].QueueID)
				}
			}
			continue
		}
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, models.ErrConflict) {
				m.log.Warn("move delayed messages into their topic; tried again at the next pass", "topic", t.Name, "err", err)
			}
			continue
		}
		for _, msg := range pr.Messages {
			written = append(written, msg.QueueID)
		}
	}
	if len(written) == 0 {
		return
	}
	slices.Sort(written)
	if err := m.notifier.Queues(ctx, slices.Compact(written)); err != nil && ctx.Err() == nil {
		m.log.Warn("notify queues of moved delayed messages", "err", err)
	}
}

// delayedRequest is the publish of ds (parked messages of t) into t's queues, or
// nil when none of them has a writable queue now.
func delayedRequest(t *models.Topic, ds []models.DelayedMessage, now time.Time) *store.PublishRequest {
	var spread []int64
	for _, q := range t.Queues {
		if q.State == models.QueueReadWrite {
			spread = append(spread, q.ID)
		}
	}
	pr := &store.PublishRequest{TopicID: t.ID, Spread: spread, Respond: func([]models.Message) (int, []byte) { return 201, nil }}
	for _, d := range ds {
		msg := d.Message
		msg.CreatedAt = now.UnixMilli()
		switch {
		case msg.Key != "":
			q, ok := t.QueueForKey(msg.Key)
			if !ok || q.State != models.QueueReadWrite {
				continue // its key's queue is read-only now: kept for a later pass
			}
			msg.QueueID = q.ID
		case len(spread) > 0:
			msg.QueueID = spread[int(d.ID%int64(len(spread)))]
		default:
			continue
		}
		pr.Messages = append(pr.Messages, msg)
		pr.Parked = append(pr.Parked, d.ID)
	}
	if len(pr.Messages) == 0 {
		return nil
	}
	return pr
}

// splitRequest returns pr as one request per message.
func splitRequest(pr *store.PublishRequest) []*store.PublishRequest {
	out := make([]*store.PublishRequest, len(pr.Messages))
	for i := range pr.Messages {
		out[i] = &store.PublishRequest{TopicID: pr.TopicID, Spread: pr.Spread, Respond: pr.Respond,
			Messages: pr.Messages[i : i+1], Parked: pr.Parked[i : i+1]}
	}
	return out
}

// dropDelayed deletes parked messages whose topic no longer exists.
func (m *Maintainer) dropDelayed(ctx context.Context, ds []models.DelayedMessage) {
	for _, d := range ds {
		if err := m.st.DelayedCancel(ctx, d.ID); err != nil && !errors.Is(err, models.ErrNotFound) {
			m.log.Warn("drop a delayed message of a deleted topic", "id", d.ID, "err", err)
			return
		}
	}
	m.log.Info("dropped delayed messages of a deleted topic", "topic", ds[0].TopicID, "messages", len(ds))
}
