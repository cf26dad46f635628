package dispatcher

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/fence"
	"github.com/heraldhq/herald/models"
)

// owner picks the live dispatcher with the highest rendezvous hash for group: sticky,
// so a join or leave moves about 1/N of groups.
func owner(group int64, live []string) string {
	best, bestScore := "", uint64(0)
	for _, id := range live {
		sum := sha256.Sum256(append(append([]byte(id), 0), strconv.AppendInt(nil, group, 10)...))
		if s := binary.BigEndian.Uint64(sum[:8]); best == "" || s > bestScore {
			best, bestScore = id, s
		}
	}
	return best
}

// applyOwnership does the step's ownership work, cheapest sufficient first: a read
// of the live set when asked (an announcement, a peer lease ending), which turns into
// a full rebalance only if the set changed; a full rebalance (the sweep, a possible
// lapse, a changed set); otherwise the reload of the groups named by notifications,
// lost commits and due retries.
func (d *Dispatcher) applyOwnership(ctx context.Context) {
	retried := d.takeRetries()
	read := false // the live set was read in this step
	if d.members.check && !d.refresh {
		d.members.check = false
		changed, ok := d.members.read(ctx)
		switch {
		case !ok:
			d.retryLater(true) // the full rebalance reads the set again
		case changed:
			d.log.Info("live dispatchers changed; rebalancing", "live", d.members.live)
			d.refresh, read = true, true
		}
	}
	if d.refresh || len(d.reload) > 0 {
		d.unsettled = true
	}
	switch {
	case d.refresh:
		d.refresh, d.members.check = false, false
		clear(d.reload) // the full rebalance reads them too
		d.rebalance(ctx, !read)
	case len(d.reload) > 0:
		d.reloadGroups(ctx)
	}
	if retried && d.retry.at.IsZero() {
		d.retry.delay = 0 // what was retried went through
	}
}

// rebalance reloads the live dispatchers (unless readLive is false: just read),
// every group and every cursor of the groups this dispatcher should own (the sweep,
// a possible lapse, and after the live set changed): it releases the groups it
// should not own, telling their new owners, and adopts the others (adopt).
// Comparing every held cursor with its row is also what finds a reset or takeover
// whose notification was lost.
func (d *Dispatcher) rebalance(ctx context.Context, readLive bool) {
	if readLive {
		if _, ok := d.members.read(ctx); !ok {
			d.retryLater(true)
			return
		}
	}
	groups, err := d.st.GroupList(ctx, 0, 0)
	if err != nil {
		d.log.Warn("list groups", "err", err)
		d.retryLater(true)
		return
	}
	groups = d.readable(groups)
	exists := make(map[int64]bool, len(groups))
	var mine []*models.Group
	for _, g := range groups {
		exists[g.ID] = true
		if owner(g.ID, d.members.live) == d.id {
			mine = append(mine, g)
		}
	}
	var moved []int64
	for id := range d.groups {
		switch {
		case !exists[id]:
			d.releaseGroup(ctx, id)
		case owner(id, d.members.live) != d.id && d.releaseOrLeave(ctx, id):
			moved = append(moved, id)
		}
	}
	d.tellNewOwners(ctx, moved)
	d.adopt(ctx, mine, true)
}

// reloadGroups re-reads only the groups in d.reload (two statements for the groups,
// one for their cursors): a group another dispatcher should own is released to it, a
// deleted one is dropped, and the rest are adopted. Groups owned elsewhere cost no
// statement.
func (d *Dispatcher) reloadGroups(ctx context.Context) {
	var ids, moved []int64
	for id := range d.reload {
		switch {
		case owner(id, d.members.live) == d.id:
			ids = append(ids, id)
		case d.groups[id] != nil:
			if d.releaseOrLeave(ctx, id) {
				moved = append(moved, id)
			}
		}
	}
	clear(d.reload)
	d.tellNewOwners(ctx, moved)
	if len(ids) == 0 {
		return
	}
	groups, err := d.st.GroupsByIDs(ctx, ids)
	if err != nil {
		d.log.Warn("read groups", "err", err)
		d.retryLater(false, ids...)
		return
	}
	groups = d.readable(groups)
	found := make(map[int64]bool, len(groups))
	for _, g := range groups {
		found[g.ID] = true
	}
	for _, id := range ids {
		if !found[id] && d.groups[id] != nil {
			d.releaseGroup(ctx, id) // deleted
		}
	}
	d.adopt(ctx, groups, false)
}

// readable returns groups without the unreadable ones (models.Group.Unreadable),
// which are then handled as absent: not adopted, released when held. Each is logged
// once per config version.
func (d *Dispatcher) readable(groups []*models.Group) []*models.Group {
	out := groups[:0:0]
	for _, g := range groups {
		if g.Unreadable == "" {
			delete(d.unreadable, g.ID)
			out = append(out, g)
			continue
		}
		if d.unreadable == nil {
			d.unreadable = map[int64]int64{}
		}
		if v, seen := d.unreadable[g.ID]; !seen || v != g.ConfigVersion {
			d.unreadable[g.ID] = g.ConfigVersion
			d.log.Error("group settings unreadable; not delivering it", "group", g.Name, "reason", g.Unreadable)
		}
	}
	return out
}

// tellNewOwners publishes a group notification for each group this dispatcher just
// released to another, so the new owner claims its cursors at once instead of at
// its next retry or sweep.
func (d *Dispatcher) tellNewOwners(ctx context.Context, ids []int64) {
	if len(ids) == 0 {
		return
	}
	if err := d.notifier.Groups(ctx, ids); err != nil {
		d.log.Warn("tell the new owners of released groups; their retries cover it", "groups", len(ids), "err", err)
	}
}

// adopt takes groups this dispatcher owns: it refreshes their settings (a changed
// config version rebuilds the pacer and re-reads their queues, so a resumed group or
// a new filter applies at once), drops cursors deleted in MySQL, claims cursors it
// does not hold, and drops and claims again a held cursor whose version or owner
// changed (an offset reset, a takeover). A cursor still leased by another
// dispatcher is tried again later (retryLater). Every claim raises the workers'
// fence to the new version; a cursor taken from another owner waits for its
// reports (takeover.go). all says groups is every group owned (the sweep), whose
// retry due times are then refreshed too.
func (d *Dispatcher) adopt(ctx context.Context, groups []*models.Group, all bool) {
	want := make([]int64, 0, len(groups))
	for _, g := range groups {
		gs := d.groups[g.ID]
		if gs == nil {
			gs = &groupState{g: g}
			d.groups[g.ID] = gs
		}
		gs.leaving = time.Time{} // owned here again
		if gs.configure(g, d.now()) {
			for _, cs := range gs.cursors {
				d.reader.dirty[cs.queueID] = true
				d.orders.modeSet(g, cs) // a block left from another mode is void
			}
		}
		want = append(want, g.ID)
	}
	if len(want) == 0 {
		return
	}
	cursors, err := d.st.Cursors().CursorsByGroups(ctx, want)
	if err != nil {
		d.log.Warn("read cursors", "err", err)
		d.retryLater(false, want...)
		return
	}
	// Moves commit with the new queues' cursors, so reading them after the cursors
	// never serves a new queue's cursor without its moves.
	moves, err := d.st.Nodes().QueueMovesActive(ctx)
	if err != nil {
		d.log.Warn("read queue moves", "err", err)
		d.retryLater(false, want...)
		return
	}
	d.movesTo = map[int64][]models.QueueMove{}
	for _, mv := range moves {
		d.movesTo[mv.To] = append(d.movesTo[mv.To], mv)
	}
	// A cursor deleted in MySQL (its topic removed, its subscription dropped) is
	// dropped here, so its queue is not read nor its jobs cut any longer.
	inDB := make(map[int64]bool, len(cursors))
	for _, c := range cursors {
		inDB[c.ID] = true
	}
	for _, id := range want {
		for _, cs := range slices.Clone(d.groups[id].cursors) {
			if !inDB[cs.id] {
				d.dropCursor(cs)
			}
		}
	}
	fences, fresh := d.claim(ctx, cursors)
	at := func(group, queue int64) *cursorState { return d.byGQ[[2]int64{group, queue}] }
	if d.orders.load(ctx, d.groups, at, fresh) {
		d.outboxDue = true
	}
	// Before anything is cut from the claimed cursors: the previous owner's jobs still
	// queued on asynq or running at a worker stop sending.
	for g, vs := range fences {
		if err := fence.Raise(ctx, d.rdb, d.keys, g, vs); err != nil {
			d.log.Warn("raise cursor fence; the previous owner's jobs may still be sent", "group", g, "err", err)
		}
	}
	d.refreshRetryDue(ctx, want, all)
	d.pace.note(d.groups)
}

// claim claims the cursors of cursors this dispatcher does not hold at their
// version (adopt) and returns the versions claimed, by group and queue (the fences
// to raise), and the cursors claimed.
func (d *Dispatcher) claim(ctx context.Context, cursors []models.Cursor) (fences map[int64]map[int64]int64, fresh map[*cursorState]bool) {
	fences, fresh = map[int64]map[int64]int64{}, map[*cursorState]bool{}
	for _, c := range cursors {
		if cs, ok := d.cursors[c.ID]; ok {
			if c.Version == cs.version && c.Owner == d.id {
				continue
			}
			// Reset (or taken over) since it was claimed: apply it now, not at the next
			// commit. Its jobs are fenced at the workers by the new version.
			d.log.Info("cursor changed elsewhere; reloading", "cursor", c.ID, "version", c.Version)
			d.dropCursor(cs)
		}
		claimed, ok, err := d.st.Cursors().CursorClaim(ctx, c.ID, d.id)
		if err != nil {
			d.log.Warn("claim cursor", "cursor", c.ID, "err", err)
			d.retryLater(false, c.GroupID)
			continue
		}
		if !ok {
			d.retryLater(false, c.GroupID) // still leased by another dispatcher
			continue
		}
		cs := d.addCursor(claimed.Cursor)
		if fences[c.GroupID] == nil {
			fences[c.GroupID] = map[int64]int64{}
		}
		fences[c.GroupID][c.QueueID] = claimed.Version
		fresh[cs] = true
		// Taken from a lapsed owner: wait out its last POST (orderedHold), then replay
		// its reports. Released by a rebalance: its owner committed first, so wait for
		// the reports of its POSTs still open (takeoverGrace, or the hold its release
		// set for an ordered POST) and replay them. Its own, or never owned: only a
		// hold left by a release.
		from, hold := claimed.PrevOwner, orderedHold(d.groups[c.GroupID].g)
		switch {
		case claimed.Released:
			hold = max(takeoverGrace, claimed.HoldLeft)
		case from == d.id || from == "":
			from, hold = "", claimed.HoldLeft
		}
		if from != "" || hold > 0 {
			d.takeovers.hold(cs, from, claimed.PrevVersion, hold)
		}
	}
	return fences, fresh
}

func (d *Dispatcher) addCursor(c models.Cursor) *cursorState {
	gs := d.groups[c.GroupID]
	cs := newCursorState(c, gs)
	gs.cursors = append(gs.cursors, cs)
	d.cursors[c.ID] = cs
	d.byGQ[[2]int64{c.GroupID, c.QueueID}] = cs
	d.reader.add(cs)
	return cs
}

// dropCursor forgets a cursor without committing (lost to a reset or takeover).
// Its jobs in flight are orphaned (jobState.orphan): their reports move no cursor
// any more, but they hold their credits until their final report, so the POSTs
// still open at workers count against max_in_flight beside the new version's jobs.
func (d *Dispatcher) dropCursor(cs *cursorState) {
	delete(d.cursors, cs.id)
	d.takeovers.forget(cs)
	d.orders.dropped(cs)
	delete(d.byGQ, [2]int64{cs.groupID, cs.queueID})
	d.reader.remove(cs)
	if gs := d.groups[cs.groupID]; gs != nil {
		gs.cursors = slices.DeleteFunc(gs.cursors, func(x *cursorState) bool { return x == cs })
	}
	for _, j := range d.jobs {
		if j.cursor == cs {
			j.orphan = true
		}
	}
}

// releaseGroup commits and releases group id's cursors (rebalance). A cursor still
// held for its takeover first applies its previous owner's reports (finishHeld), so
// the commit carries them: the next owner replays only this dispatcher's stream.
func (d *Dispatcher) releaseGroup(ctx context.Context, id int64) {
	gs := d.groups[id]
	d.takeovers.finishHeld(ctx, gs.cursors)
	d.commit(ctx)
	ids, held := releasable(gs.cursors)
	for _, cs := range slices.Clone(gs.cursors) {
		d.dropCursor(cs)
	}
	for id, j := range d.jobs {
		if j.group == gs {
			d.dropJob(id) // the group goes, and its credits with it
		}
	}
	d.members.release(ctx, ids, held)
	delete(d.groups, id)
	d.pace.note(d.groups)
}
