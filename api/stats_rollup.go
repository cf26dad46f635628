package api

import (
	"context"
	"sync"
	"time"
)

// Rollup timings of the api role: published counts are flushed every
// statsFlushInterval, lag is sampled every statsLagInterval, rows older than 7 days
// are pruned every statsPruneInterval.
const (
	statsFlushInterval = 5 * time.Second
	statsLagInterval   = 20 * time.Second
	statsPruneInterval = time.Hour
)

// statsRollup counts published messages per (minute, topic) in memory until the
// next flush into stats_minutely: one upsert per topic and minute, never per message.
// The zero value is ready. Safe for concurrent use.
type statsRollup struct {
	mu        sync.Mutex
	published map[statsKey]int64
}

type statsKey struct {
	minute  int64 // Unix s, truncated to the minute
	topicID int64
}

func (r *statsRollup) addPublished(topicID int64, n int) {
	k := statsKey{minute: time.Now().Truncate(time.Minute).Unix(), topicID: topicID}
	r.mu.Lock()
	if r.published == nil {
		r.published = map[statsKey]int64{}
	}
	r.published[k] += int64(n)
	r.mu.Unlock()
}

func (r *statsRollup) take() map[statsKey]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.published
	r.published = nil
	return out
}

// runStats keeps the per-minute rollups (DESIGN §7 charts) until ctx ends, then
// flushes what it holds. Delivered and failed counts come from the dispatcher
// (store.StatsAdd); lag is sampled here from cursors and queue max offsets.
func (s *Server) runStats(ctx context.Context) {
	flush := time.NewTicker(statsFlushInterval)
	defer flush.Stop()
	lag := time.NewTicker(statsLagInterval)
	defer lag.Stop()
	prune := time.NewTicker(statsPruneInterval)
	defer prune.Stop()
	s.sampleLag(ctx)
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			s.flushStats(fctx)
			cancel()
			return
		case <-flush.C:
			s.flushStats(ctx)
		case <-lag.C:
			s.sampleLag(ctx)
		case <-prune.C:
			if err := s.st.StatsPrune(ctx, time.Now()); err != nil {
				s.log.Warn("prune stats", "err", err)
			}
		}
	}
}

func (s *Server) flushStats(ctx context.Context) {
	for k, n := range s.stats.take() {
		if err := s.st.StatsAdd(ctx, time.Unix(k.minute, 0), 0, k.topicID, n, 0, 0); err != nil {
			s.log.Warn("flush published stats", "topic", k.topicID, "err", err)
		}
	}
}

func (s *Server) sampleLag(ctx context.Context) {
	lags, err := s.st.GroupLags(ctx)
	if err == nil {
		err = s.st.StatsSampleLag(ctx, time.Now(), lags)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("sample lag", "err", err)
	}
}
