package dispatcher

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/models/store"
)

// commit writes every changed cursor in one transaction, fenced by version and owner.
// A cursor whose fence fails was reset or taken over: it is dropped and reclaimed at
// the next rebalance from its new committed state.
func (d *Dispatcher) commit(ctx context.Context) {
	var commits []store.CursorCommit
	for _, cs := range d.cursors {
		if !cs.dirty {
			continue
		}
		commits = append(commits, store.CursorCommit{ID: cs.id, Version: cs.version, Offset: cs.committed, Holes: cs.holeRanges(cs.committed)})
	}
	if len(commits) == 0 {
		return
	}
	lost, err := d.st.CursorsCommit(ctx, d.id, commits)
	if err != nil {
		d.log.Warn("commit cursors", "err", err)
		return
	}
	for _, c := range commits {
		if cs := d.cursors[c.ID]; cs != nil && cs.committed == c.Offset {
			cs.dirty = false
		}
	}
	for _, id := range lost {
		if cs := d.cursors[id]; cs != nil {
			d.log.Info("cursor fence lost (reset or takeover); reloading", "cursor", id)
			d.dropCursor(cs)
			d.refresh = true
		}
	}
}

// updateLag publishes each owned group's lag: offsets between its cursors and the
// queues' max offsets at the last poll, and the age of the oldest message read but
// not done.
func (d *Dispatcher) updateLag() {
	nowMS := d.now().UnixMilli()
	for _, gs := range d.groups {
		var msgs int64
		oldest := int64(0)
		for _, cs := range gs.cursors {
			if m := d.maxIDs[cs.queueID]; m > cs.committed {
				msgs += m - cs.committed
			}
			if o := cs.oldestUndone(); o > 0 && (oldest == 0 || o < oldest) {
				oldest = o
			}
		}
		metrics.LagMessages.WithLabelValues(gs.g.Name).Set(float64(msgs))
		lag := 0.0
		if oldest > 0 {
			lag = float64(nowMS-oldest) / float64(time.Second/time.Millisecond)
		}
		metrics.LagSeconds.WithLabelValues(gs.g.Name).Set(lag)
	}
}
