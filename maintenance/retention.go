package maintenance

import (
	"context"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/fence"
	"github.com/heraldhq/herald/models"
)

// retentionChunks is how many chunks per table one run of dead-letter expiry,
// deleted-group purging and idempotency-key pruning removes at most.
const retentionChunks = 20

// runRetention applies every topic's retention queue by queue (DESIGN §3, PMQ's
// save_day_num): messages older than the retention are deleted, in chunks of
// RetentionChunk rows in id order, up to the lowest offset every subscribed group
// has consumed (never a message a retry row or dead letter references). What a
// lagging group holds back is reported (herald_retention_held_back_messages). A
// strict topic first moves lagging cursors past its expired messages — a fenced
// reset, as an offset reset is: the owner reloads, workers drop older jobs — counts
// them per group (herald_messages_expired_total, retention_expired) and logs it,
// then deletes them. Dead letters past their group's retention and deleted groups'
// rows past their grace go too, and idempotency keys past store.IdempotencyTTL (in
// chunks of RetentionChunk rows). A run stops at RetentionBudget and reports
// whether work is left, so the loop runs it again after a lease renewal.
func (m *Maintainer) runRetention(ctx context.Context) (again bool) {
	if !m.Leader() {
		return false
	}
	defer m.TestSignals.DutyRan.Signal(DutyRetention)
	start := m.now()
	over := func() bool { return m.now().Sub(start) >= m.cfg.RetentionBudget || ctx.Err() != nil || !m.Leader() }
	queues, err := m.st.QueueIDs(ctx)
	if err != nil {
		m.warn(ctx, "retention: list queues", err)
		return false
	}
	topics, err := m.st.QueueTopics(ctx)
	if err != nil {
		m.warn(ctx, "retention: read queue topics", err)
		return false
	}
	for i := range queues {
		q := queues[(m.retentionNext+i)%len(queues)]
		if over() {
			m.retentionNext = (m.retentionNext + i) % len(queues)
			return true
		}
		if !m.pruneQueue(ctx, q, topics[q], over) {
			m.retentionNext = (m.retentionNext + i) % len(queues)
			return true
		}
	}
	m.retentionNext = 0
	m.dropRetentionSeries(topics)
	if n, err := m.st.DeadLettersExpire(ctx, retentionChunks); err != nil {
		m.warn(ctx, "expire dead letters", err)
	} else if n > 0 {
		m.log.Info("dead letters expired", "count", n)
	}
	if _, err := m.st.DeletedGroupsPurge(ctx, retentionChunks); err != nil {
		m.warn(ctx, "purge deleted groups", err)
	}
	n, done, err := m.st.IdempotencyPrune(ctx, m.cfg.RetentionChunk, retentionChunks)
	if err != nil {
		m.warn(ctx, "prune idempotency keys", err)
	} else if n > 0 {
		m.log.Info("idempotency keys pruned", "count", n)
	}
	return err == nil && !done
}

// pruneQueue applies retention to queue q of topic; false when the budget ran out
// before it finished.
func (m *Maintainer) pruneQueue(ctx context.Context, q int64, topic string, over func() bool) bool {
	r, err := m.st.QueueRetentionGet(ctx, q, m.now())
	if err != nil {
		m.warn(ctx, "retention: read queue state", err, "queue", q)
		return true
	}
	through := r.Floor
	qs := strconv.FormatInt(q, 10)
	m.noteRetentionSeries(q, topic)
	if r.Policy == models.RetentionStrict && r.Cutoff > r.Floor {
		m.expireLagging(ctx, q, topic, r.Cutoff)
		through = r.Cutoff
		heldBack.WithLabelValues(topic, qs).Set(0)
	} else {
		heldBack.WithLabelValues(topic, qs).Set(float64(r.HeldBack))
	}
	if through <= 0 {
		return true
	}
	for {
		n, done, err := m.st.QueuePrune(ctx, q, through, m.cfg.RetentionChunk, 1)
		if n > 0 {
			pruned.WithLabelValues(topic).Add(float64(n))
		}
		if err != nil {
			m.warn(ctx, "retention: prune queue", err, "queue", q)
			return true
		}
		if done {
			return true
		}
		select {
		case <-time.After(m.cfg.RetentionPause):
		case <-ctx.Done():
			return false
		}
		if over() {
			return false
		}
	}
}

// expireLagging moves the cursors of strict topic's queue q below through past it,
// fences their old jobs, tells their owners, and counts and logs what each group loses.
func (m *Maintainer) expireLagging(ctx context.Context, q int64, topic string, through int64) {
	moved, err := m.st.CursorsExpire(ctx, q, through)
	if err != nil {
		m.warn(ctx, "retention: move cursors past expired messages", err, "queue", q)
		return
	}
	if len(moved) == 0 {
		return
	}
	ids := make([]int64, len(moved))
	for i, c := range moved {
		ids[i] = c.GroupID
	}
	names, err := m.st.GroupNames(ctx, ids)
	if err != nil {
		m.warn(ctx, "retention: read group names", err)
	}
	for _, c := range moved {
		if err := fence.Raise(ctx, m.rdb, m.keys, c.GroupID, map[int64]int64{q: c.Version}); err != nil {
			m.warn(ctx, "retention: raise cursor fence; jobs cut before the expiry may still be sent", err, "group", c.GroupID)
		}
		if err := m.notifier.Group(ctx, c.GroupID); err != nil {
			m.warn(ctx, "retention: notify group", err, "group", c.GroupID)
		}
		name := names[c.GroupID]
		expired.WithLabelValues(name).Add(float64(c.Dropped))
		m.log.Warn("strict retention dropped messages the group had not consumed", "group", name, "topic", topic,
			"queue", q, "messages", c.Dropped, "through_offset", through)
	}
}

// warn logs err unless ctx ended (shutdown).
func (m *Maintainer) warn(ctx context.Context, msg string, err error, args ...any) {
	if ctx.Err() == nil {
		m.log.Warn(msg, append(args, "err", err)...)
	}
}

// retentionAgainDelay is the shortest wait before a run that left work runs again.
const retentionAgainDelay = 50 * time.Millisecond
