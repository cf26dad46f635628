package worker

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/metrics"
)

// seriesSweepEvery is how often a worker looks for deleted groups among those it
// cached, to remove their metric series, when no fence announcement (a deletion
// retires the group's fences) prompts it sooner.
const seriesSweepEvery = 30 * time.Second

// sweepDeletedGroups removes the metric series (metrics.DeleteGroupWorkerSeries)
// and the cached copy of every cached group that no longer exists, at each fence
// announcement and every seriesSweepEvery, until ctx ends.
func (w *Worker) sweepDeletedGroups(ctx context.Context) {
	t := time.NewTicker(seriesSweepEvery)
	defer t.Stop()
	for {
		changed := w.fences.Changed()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-changed:
		}
		w.dropDeletedGroups(ctx)
	}
}

// dropDeletedGroups checks the cached groups in one statement and forgets the
// deleted ones with their series.
func (w *Worker) dropDeletedGroups(ctx context.Context) {
	w.mu.Lock()
	ids := make([]int64, 0, len(w.groups))
	for id := range w.groups {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	names, err := w.st.GroupNames(ctx, ids)
	if err != nil {
		w.log.Warn("look for deleted groups", "err", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		g := w.groups[id]
		if _, ok := names[id]; ok || g == nil {
			continue
		}
		metrics.DeleteGroupWorkerSeries(g.Name)
		delete(w.groups, id)
	}
}
