package dispatcher

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/metrics"
)

// backlogSampleEvery is how often an owner samples its groups' retry-topic and
// dead-letter sizes for metrics (two grouped queries for all its groups).
const backlogSampleEvery = 5 * time.Second

// exportGroupMetrics sets the breaker state of every owned group, samples retry and
// dead-letter sizes at most every backlogSampleEvery, and deletes every per-group
// series of groups this dispatcher no longer owns (moved by a rebalance, deleted or
// renamed), so after a rebalance only the new owner reports a group.
func (d *Dispatcher) exportGroupMetrics(ctx context.Context) {
	for id, name := range d.exported {
		if gs := d.groups[id]; gs == nil || gs.g.Name != name {
			metrics.DeleteGroupOwnerSeries(name)
			delete(d.exported, id)
		}
	}
	ids := make([]int64, 0, len(d.groups))
	for id, gs := range d.groups {
		ids = append(ids, id)
		d.exported[id] = gs.g.Name
		metrics.BreakerState.WithLabelValues(gs.g.Name).Set(breakerGauge(gs.state))
	}
	now := d.now()
	if now.Sub(d.lastBacklogSample) < backlogSampleEvery {
		return
	}
	d.lastBacklogSample = now
	retry, dead, err := d.st.GroupBacklogs(ctx, ids)
	if err != nil {
		d.log.Warn("sample group backlogs", "err", err)
		return
	}
	for id, gs := range d.groups {
		metrics.RetryMessages.WithLabelValues(gs.g.Name).Set(float64(retry[id]))
		metrics.DeadLetters.WithLabelValues(gs.g.Name).Set(float64(dead[id]))
	}
}

// breakerGauge encodes a breaker state for herald_group_breaker_state.
func breakerGauge(state string) float64 {
	switch state {
	case breakerOpen:
		return 2
	case breakerHalfOpen:
		return 1
	}
	return 0
}

// deleteGroupMetrics removes every series this dispatcher exported (on shutdown).
func (d *Dispatcher) deleteGroupMetrics() {
	for id, name := range d.exported {
		metrics.DeleteGroupOwnerSeries(name)
		delete(d.exported, id)
	}
}
