package api

import (
	"context"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/metrics"
)

// topicSeriesSweepEvery is how often the api looks for deleted topics among those it
// exported a series for, when no topic change in this process prompts it sooner (a
// topic deleted through another api replica).
const topicSeriesSweepEvery = 30 * time.Second

// topicSeries remembers the topics this api exported a herald_published_messages_total
// series for, so the series of a deleted topic goes with it. The zero value is
// ready; safe for concurrent use.
type topicSeries struct {
	names sync.Map      // topic name → struct{}
	due   chan struct{} // a topic changed in this process: sweep now (buffer of one)
	once  sync.Once
}

// published counts n messages stored in topic name.
func (ts *topicSeries) published(name string, n int) {
	metrics.Published.WithLabelValues(name).Add(float64(n))
	if _, ok := ts.names.Load(name); !ok {
		ts.names.Store(name, struct{}{})
	}
}

// changed asks the sweep to run now (a topic of this process changed or went).
func (ts *topicSeries) changed() {
	select {
	case ts.wake() <- struct{}{}:
	default:
	}
}

func (ts *topicSeries) wake() chan struct{} {
	ts.once.Do(func() { ts.due = make(chan struct{}, 1) })
	return ts.due
}

// runTopicSeries sweeps deleted topics' series (sweepTopicSeries) on each topic
// change in this process and every topicSeriesSweepEvery, until ctx ends.
func (s *Server) runTopicSeries(ctx context.Context) {
	t := time.NewTicker(topicSeriesSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.series.wake():
		}
		s.sweepTopicSeries(ctx)
	}
}

// sweepTopicSeries deletes the series of every topic it exported that no longer
// exists (one statement).
func (s *Server) sweepTopicSeries(ctx context.Context) {
	var names []string
	s.series.names.Range(func(k, _ any) bool {
		names = append(names, k.(string))
		return true
	})
	if len(names) == 0 {
		return
	}
	exists, err := s.ctl.TopicsExisting(ctx, names)
	if err != nil {
		s.log.Warn("look for deleted topics' metric series", "err", err)
		return
	}
	for _, n := range names {
		if !exists[n] {
			s.series.names.Delete(n)
			metrics.Published.DeleteLabelValues(n)
		}
	}
}
