package dispatcher

import (
	"context"
	"time"

	"github.com/heraldhq/herald/models"
)

// orderedHold is how long a cursor of g claimed from another owner waits before it
// sends: the previous owner's last POST may run for timeout_ms after the fence
// stops its jobs (RocketMQ's queue lock expiry), plus the report flush.
func orderedHold(g *models.Group) time.Duration {
	if !g.Ordered {
		return takeoverGrace
	}
	return takeoverGrace + time.Duration(g.TimeoutMS)*time.Millisecond
}

// releasable splits cursors to release into those free at once and, by hold, the
// ordered ones with a job in flight: their next owner waits out that job's POST.
func releasable(css []*cursorState) (free []int64, held map[time.Duration][]int64) {
	held = map[time.Duration][]int64{}
	for _, cs := range css {
		if g := cs.group.g; g.Ordered && cs.jobs > 0 {
			h := orderedHold(g)
			held[h] = append(held[h], cs.id)
			continue
		}
		free = append(free, cs.id)
	}
	return free, held
}

// release gives up this dispatcher's cursors (see releasable); their next owner
// replays this dispatcher's report stream (store.CursorsRelease).
func (m *members) release(ctx context.Context, free []int64, held map[time.Duration][]int64) {
	if err := m.st.Cursors().CursorsRelease(ctx, m.id, free); err != nil {
		m.log.Warn("release cursors", "err", err)
	}
	for hold, ids := range held {
		if err := m.st.Cursors().CursorsReleaseHeld(ctx, m.id, ids, hold); err != nil {
			m.log.Warn("release held cursors", "err", err)
		}
	}
}
