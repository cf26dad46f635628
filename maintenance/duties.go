package maintenance

import (
	"context"
	"slices"
)

// outboxBatch is how many dead letters one outbox run appends at most; a full batch
// makes Run call it again before waiting.
const outboxBatch = 100

// runOutbox appends new dead letters to their groups' `<group>.dlq` topics (each
// append is idempotent in the store) and notifies the dead-letter queues it
// wrote to, so the dispatchers owning cursors there read them at once.
func (m *Maintainer) runOutbox(ctx context.Context) {
	m.outboxAgain = false
	if !m.Leader() {
		return
	}
	defer m.TestSignals.DutyRan.Signal(DutyOutbox)
	queues, err := m.st.DeadLetterOutbox(ctx, outboxBatch)
	if err != nil && ctx.Err() == nil {
		m.log.Warn("dead-letter outbox", "err", err)
	}
	if len(queues) == 0 {
		return
	}
	m.outboxAgain = err == nil && len(queues) == outboxBatch
	slices.Sort(queues)
	if err := m.notifier.Queues(ctx, slices.Compact(queues)); err != nil && ctx.Err() == nil {
		m.log.Warn("notify dead-letter queues", "err", err)
	}
}

// sampleLag records every group's lag in the per-minute rollups (the console's
// charts).
func (m *Maintainer) sampleLag(ctx context.Context) {
	defer m.TestSignals.DutyRan.Signal(DutyLag)
	lags, err := m.st.GroupLags(ctx)
	if err == nil {
		err = m.st.StatsSampleLag(ctx, m.now(), lags)
	}
	if err != nil && ctx.Err() == nil {
		m.log.Warn("sample lag", "err", err)
	}
}

// runHourly prunes rollups older than store.StatsRetention and keeps the
// delivery-attempt log's daily partitions (today and two days ahead; dropping those
// past AttemptRetention).
func (m *Maintainer) runHourly(ctx context.Context) {
	defer m.TestSignals.DutyRan.Signal(DutyHourly)
	now := m.now()
	if err := m.st.StatsPrune(ctx, now); err != nil && ctx.Err() == nil {
		m.log.Warn("prune stats", "err", err)
	}
	if err := m.st.AttemptsPartitions(ctx, now, m.cfg.AttemptRetention); err != nil && ctx.Err() == nil {
		m.log.Warn("attempt partitions", "err", err)
	}
}
