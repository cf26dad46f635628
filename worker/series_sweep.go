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
	cached := map[int64]string{}
	w.groups.Range(func(id int64, g *cachedGroup) bool {
		cached[id] = g.Name
		return true
	})
	if len(cached) == 0 {
		return
	}
	ids := make([]int64, 0, len(cached))
	for id := range cached {
		ids = append(ids, id)
	}
	names, err := w.st.GroupNames(ctx, ids)
	if err != nil {
		w.log.Warn("look for deleted groups", "err", err)
		return
	}
	for id, name := range cached {
		if _, ok := names[id]; ok {
			continue
		}
		metrics.DeleteGroupWorkerSeries(name)
		w.groups.Drop(id)
	}
}
