package maintenance

import (
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
)

// DeadReportsTTL is how long the report stream of a dispatcher that died is kept:
// the dispatchers taking its cursors over read it within seconds; an hour covers
// one replaying late, as the takeover itself keeps it.
const DeadReportsTTL = time.Hour

// runHygiene keeps Redis free of keys nobody will remove: the report streams of
// dispatchers no longer alive get DeadReportsTTL (a worker may still push to one,
// so it is not deleted at once), and the fence hashes of groups that no longer
// exist are deleted. Every other key Herald writes has a TTL or lives in asynq's
// queue structures. SCAN-based, so a big Redis is walked in pages.
func (m *Maintainer) runHygiene(ctx context.Context) {
	if !m.Leader() {
		return
	}
	defer m.TestSignals.DutyRan.Signal(DutyHygiene)
	live, err := m.st.DispatchersLive(ctx)
	if err != nil {
		m.warn(ctx, "hygiene: list live dispatchers", err)
		return
	}
	m.scan(ctx, m.keys.ReportsPattern(), func(keys []string) {
		for _, k := range keys {
			if owner, ok := m.keys.ReportsOwner(k); !ok || slices.Contains(live, owner) {
				continue
			}
			if ttl, err := m.rdb.TTL(ctx, k).Result(); err == nil && ttl < 0 {
				m.rdb.Expire(ctx, k, DeadReportsTTL)
			}
		}
	})
	m.scan(ctx, m.keys.FencePattern(), func(keys []string) {
		ids := make([]int64, 0, len(keys))
		byID := map[int64]string{}
		for _, k := range keys {
			if id, ok := m.keys.FenceGroup(k); ok {
				ids = append(ids, id)
				byID[id] = k
			}
		}
		names, err := m.st.GroupNames(ctx, ids)
		if err != nil {
			m.warn(ctx, "hygiene: read groups", err)
			return
		}
		for id, k := range byID {
			if _, ok := names[id]; !ok {
				// Workers that saw a deleted group's retired fence keep it in memory;
				// the others find no group within their 1 s cache.
				m.rdb.Del(ctx, k)
			}
		}
	})
}

// scan calls fn with each page of keys matching pattern (every master's on a
// cluster, delivery.Scan).
func (m *Maintainer) scan(ctx context.Context, pattern string, fn func([]string)) {
	if err := delivery.Scan(ctx, m.rdb, pattern, 500, fn); err != nil {
		m.warn(ctx, "hygiene: scan", err, "pattern", pattern)
	}
}
