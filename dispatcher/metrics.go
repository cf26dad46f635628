package dispatcher

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/models/store"
)

// Backlog sampling: retry-topic and dead-letter sizes change through what the owner
// sees (reports naming retries or dead letters, retry rows it writes, group
// notifications of redrives, purges and resends) and through little else (dead-letter
// expiry in the maintenance role). An owner samples them with one grouped statement
// for all its groups at most every backlogSampleEvery after such a change or a newly
// owned group, and every backlogSweepEvery whatever happened.
const (
	backlogSampleEvery = 5 * time.Second
	backlogSweepEvery  = time.Minute
)

// The per-group series one owner exports, in groupGauges order.
const (
	gaugeLagMessages = iota
	gaugeLagSeconds
	gaugeBreaker
	gaugeRetry
	gaugeDead
	gaugeBlockedKeys
	gaugeCount
)

// groupGauges are the series an owner exports for one group, looked up once (no
// WithLabelValues per tick) with the values last set, so a tick sets only what
// changed. A series exists from its first set: lag and breaker at the first tick,
// retry and dead letters at the first backlog sample.
type groupGauges struct {
	name  string
	g     [gaugeCount]prometheus.Gauge
	value [gaugeCount]float64
}

func newGroupGauges(name string) *groupGauges {
	return &groupGauges{name: name}
}

// set sets series i to v unless it already holds v.
func (gg *groupGauges) set(i int, v float64) {
	if gg.g[i] != nil && gg.value[i] == v {
		return
	}
	if gg.g[i] == nil {
		vecs := [gaugeCount]*prometheus.GaugeVec{metrics.LagMessages, metrics.LagSeconds, metrics.BreakerState, metrics.RetryMessages, metrics.DeadLetters, metrics.BlockedKeys}
		gg.g[i] = vecs[i].WithLabelValues(gg.name)
	}
	gg.g[i].Set(v)
	gg.value[i] = v
}

// ownerMetrics are the per-group series this dispatcher exports as the owner of
// its groups: lag, breaker state, retry and dead-letter sizes, blocked keys. Used
// from Run's loop only.
type ownerMetrics struct {
	st  *store.Store
	log *slog.Logger
	now Clock
	// blockedKeys counts a group's blocked keys (keyOrder.blockedKeys).
	blockedKeys func(gs *groupState) int
	// exported holds the series set, by group id.
	exported          map[int64]*groupGauges
	lastBacklogSample time.Time
}

// gauges returns gs's series, creating them for a group newly owned or renamed
// (export deletes the old name's), and asks for a backlog sample then.
func (m *ownerMetrics) gauges(gs *groupState) *groupGauges {
	if m.exported == nil {
		m.exported = map[int64]*groupGauges{}
	}
	gg := m.exported[gs.g.ID]
	if gg == nil || gg.name != gs.g.Name {
		if gg != nil {
			metrics.DeleteGroupOwnerSeries(gg.name)
		}
		gg = newGroupGauges(gs.g.Name)
		m.exported[gs.g.ID] = gg
		gs.health.backlogDirty = true
	}
	return gg
}

// export sets the breaker state of every owned group, samples retry and
// dead-letter sizes (see backlogSampleEvery), and deletes every per-group series of
// groups this dispatcher no longer owns (moved by a rebalance, deleted), so after a
// rebalance only the new owner reports a group.
func (m *ownerMetrics) export(ctx context.Context, groups map[int64]*groupState) {
	for id, gg := range m.exported {
		if gs := groups[id]; gs == nil || gs.g.Name != gg.name {
			metrics.DeleteGroupOwnerSeries(gg.name)
			delete(m.exported, id)
		}
	}
	changed := false
	for _, gs := range groups {
		m.gauges(gs).set(gaugeBreaker, breakerGauge(gs.health.breaker.state))
		if gs.g.OrderedByKey() {
			m.gauges(gs).set(gaugeBlockedKeys, float64(m.blockedKeys(gs)))
		}
		changed = changed || gs.health.backlogDirty
	}
	now := m.now()
	since := now.Sub(m.lastBacklogSample)
	if len(groups) == 0 || since < backlogSampleEvery || (!changed && since < backlogSweepEvery) {
		return
	}
	m.lastBacklogSample = now
	ids := make([]int64, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	retry, dead, err := m.st.GroupBacklogs(ctx, ids)
	if err != nil {
		m.log.Warn("sample group backlogs", "err", err)
		return
	}
	for id, gs := range groups {
		gs.health.backlogDirty = false
		gg := m.gauges(gs)
		gg.set(gaugeRetry, float64(retry[id]))
		gg.set(gaugeDead, float64(dead[id]))
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

// deleteAll removes every series this dispatcher exported (on shutdown).
func (m *ownerMetrics) deleteAll() {
	for id, gg := range m.exported {
		metrics.DeleteGroupOwnerSeries(gg.name)
		delete(m.exported, id)
	}
}

// updateLag publishes each owned group's lag: offsets between its cursors and the
// queues' max offsets at the last poll plus the read messages the commits list as not
// done, and the age of the oldest message read but not done. Only values that
// changed are set (groupGauges). maxIDs are the queues' max offsets at the last
// poll (queueReader.maxIDs).
func (m *ownerMetrics) updateLag(groups map[int64]*groupState, maxIDs map[int64]int64) {
	nowMS := m.now().UnixMilli()
	for _, gs := range groups {
		var msgs int64
		oldest := int64(0)
		for _, cs := range gs.cursors {
			if m := maxIDs[cs.queueID]; m > cs.committed {
				msgs += m - cs.committed
			}
			msgs += int64(len(cs.late))
			if len(cs.pending)+len(cs.inflight) == 0 {
				continue // nothing read and not done
			}
			if o := cs.oldestUndone(); o > 0 && (oldest == 0 || o < oldest) {
				oldest = o
			}
		}
		lag := 0.0
		if oldest > 0 {
			lag = float64(nowMS-oldest) / float64(time.Second/time.Millisecond)
		}
		gg := m.gauges(gs)
		gg.set(gaugeLagMessages, float64(msgs))
		gg.set(gaugeLagSeconds, lag)
	}
}
