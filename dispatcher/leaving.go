package dispatcher

import (
	"context"
	"time"

	"github.com/heraldhq/herald/models"
)

// leaveWithin bounds how long a group leaving this dispatcher (a rebalance hands it
// to another) keeps its cursors while its jobs are in flight: their POSTs end
// within timeout_ms, plus the report flush. A job still running then is stopped
// before its next POST by the new owner's fence.
func leaveWithin(g *models.Group) time.Duration {
	return takeoverGrace + time.Duration(g.TimeoutMS)*time.Millisecond
}

// releaseOrLeave releases group id (releaseGroup) when none of its jobs is in
// flight, or its leaving time is up; otherwise the group is leaving: it cuts no
// new job and keeps its cursors until its jobs' final reports are applied, so its
// next owner, whose claim waits for the release, never opens POSTs beside this
// dispatcher's (max_in_flight holds across a hand-back). It reports whether the
// group was released.
func (d *Dispatcher) releaseOrLeave(ctx context.Context, id int64) bool {
	gs := d.groups[id]
	if gs.inflightP > 0 {
		now := d.now()
		if gs.leaving.IsZero() {
			gs.leaving = now.Add(leaveWithin(gs.g))
			if d.leaving == nil {
				d.leaving = map[int64]struct{}{}
			}
			d.leaving[id] = struct{}{}
			d.log.Debug("group leaving once its POSTs end", "group", gs.g.Name, "in_flight", gs.inflightP)
		}
		if now.Before(gs.leaving) {
			d.wakeBy(gs.leaving)
			return false
		}
	}
	delete(d.leaving, id)
	d.releaseGroup(ctx, id)
	return true
}

// finishLeaving releases the leaving groups whose jobs are done or whose time is
// up, and tells their new owners.
func (d *Dispatcher) finishLeaving(ctx context.Context) {
	var moved []int64
	for id := range d.leaving {
		if d.groups[id] == nil || d.groups[id].leaving.IsZero() {
			delete(d.leaving, id) // released or owned here again
			continue
		}
		if d.releaseOrLeave(ctx, id) {
			moved = append(moved, id)
		}
	}
	d.tellNewOwners(ctx, moved)
}
