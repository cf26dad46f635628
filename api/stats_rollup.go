package api

import (
	"context"
	"sync"
	"time"
)

// statsFlushInterval is how often the api flushes its published counts into the
// per-minute rollups. Lag samples and pruning are the maintenance role's.
const statsFlushInterval = 5 * time.Second

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

// runStats flushes this replica's published counts into the per-minute rollups
// (the console's charts) until ctx ends, then flushes what it holds. Each replica counts
// only what it published, so every replica runs it. Delivered and failed counts come
// from the dispatcher (control: AddPublished); lag samples and pruning from the maintenance
// role.
func (s *Server) runStats(ctx context.Context) {
	flush := time.NewTicker(statsFlushInterval)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			s.flushStats(fctx)
			cancel()
			return
		case <-flush.C:
			s.flushStats(ctx)
		}
	}
}

func (s *Server) flushStats(ctx context.Context) {
	for k, n := range s.stats.take() {
		if err := s.ctl.AddPublished(ctx, time.Unix(k.minute, 0), k.topicID, n); err != nil {
			s.log.Warn("flush published stats", "topic", k.topicID, "err", err)
		}
	}
}
