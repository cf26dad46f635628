package dispatcher

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/fence"
	"github.com/heraldhq/herald/models"
)

func (d *Dispatcher) heartbeat(ctx context.Context) error {
	host, _ := os.Hostname()
	return d.st.DispatcherHeartbeat(ctx, d.id, host, d.cfg.LeaseDuration)
}

// beat renews the lease every HeartbeatInterval until ctx ends, on its own goroutine
// so a slow step of the loop cannot let a short lease lapse. A heartbeat under way
// when ctx ends completes (bounded by the lease) before beat returns.
func (d *Dispatcher) beat(ctx context.Context) {
	t := time.NewTicker(d.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.LeaseDuration)
			if err := d.heartbeat(hctx); err != nil {
				d.log.Warn("dispatcher heartbeat", "err", err)
			}
			cancel()
		}
	}
}

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

// rebalance reloads groups and live dispatchers, claims cursors of groups this
// dispatcher should own, releases those it should not, and refreshes settings. A
// held cursor whose version or owner changed (an offset reset) is dropped and
// claimed again at once. Every claim raises the workers' fence to the new version;
// a cursor taken from another owner waits for its reports (takeover.go).
func (d *Dispatcher) rebalance(ctx context.Context) {
	live, err := d.st.DispatchersLive(ctx)
	if err != nil {
		d.log.Warn("list live dispatchers", "err", err)
		return
	}
	if !slices.Contains(live, d.id) {
		live = append(live, d.id)
	}
	d.alone.Store(len(live) == 1) // local notifications then need no Redis copy (Notified)
	groups, err := d.st.GroupList(ctx, 0, 0)
	if err != nil {
		d.log.Warn("list groups", "err", err)
		return
	}
	mine := map[int64]*models.Group{}
	for _, g := range groups {
		if owner(g.ID, live) == d.id {
			mine[g.ID] = g
		}
	}
	for id := range d.groups {
		if _, ok := mine[id]; !ok {
			d.releaseGroup(ctx, id)
		}
	}
	var want []int64
	for id, g := range mine {
		gs := d.groups[id]
		if gs == nil {
			gs = &groupState{g: g}
			d.groups[id] = gs
		}
		changed := gs.g.ConfigVersion != g.ConfigVersion || gs.pace == nil
		gs.g = g
		if changed {
			if gs.pace == nil {
				gs.pace = newPacer(g.RateLimit, g.BatchSize, d.now())
			} else {
				gs.pace.configure(g.RateLimit, g.BatchSize, d.now())
			}
			gs.nextRetry = time.Time{}
		}
		want = append(want, id)
	}
	if len(want) == 0 {
		return
	}
	cursors, err := d.st.CursorsByGroups(ctx, want)
	if err != nil {
		d.log.Warn("read cursors", "err", err)
		return
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
	fences := map[int64]map[int64]int64{} // group → queue → claimed version
	fresh := map[*cursorState]bool{}
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
		claimed, ok, err := d.st.CursorClaim(ctx, c.ID, d.id)
		if err != nil {
			d.log.Warn("claim cursor", "cursor", c.ID, "err", err)
			continue
		}
		if !ok {
			continue // still leased by another dispatcher; retried next rebalance
		}
		cs := d.addCursor(claimed.Cursor)
		if fences[c.GroupID] == nil {
			fences[c.GroupID] = map[int64]int64{}
		}
		fences[c.GroupID][c.QueueID] = claimed.Version
		fresh[cs] = true
		hold := orderedHold(d.groups[c.GroupID].g)
		switch {
		case claimed.PrevOwner != "" && claimed.PrevOwner != d.id:
			d.holdForTakeover(cs, claimed.PrevOwner, claimed.PrevVersion, hold)
		case claimed.HoldLeft > 0:
			// Released while its owner still had an ordered POST in flight.
			d.holdForTakeover(cs, "", claimed.PrevVersion, claimed.HoldLeft)
		}
	}
	d.loadBlocks(ctx, fresh)
	// Before anything is cut from the claimed cursors: the previous owner's jobs still
	// queued on asynq or running at a worker stop sending.
	for g, vs := range fences {
		if err := fence.Raise(ctx, d.rdb, d.keys, g, vs); err != nil {
			d.log.Warn("raise cursor fence; the previous owner's jobs may still be sent", "group", g, "err", err)
		}
	}
}

func (d *Dispatcher) addCursor(c models.Cursor) *cursorState {
	gs := d.groups[c.GroupID]
	cs := newCursorState(c, gs)
	gs.cursors = append(gs.cursors, cs)
	d.cursors[c.ID] = cs
	d.byQueue[c.QueueID] = append(d.byQueue[c.QueueID], cs)
	d.byGQ[[2]int64{c.GroupID, c.QueueID}] = cs
	d.dirtyQ[c.QueueID] = true
	return cs
}

// dropCursor forgets a cursor without committing (lost to a reset or takeover).
// Its in-flight jobs are abandoned; their reports no longer match and are dropped.
func (d *Dispatcher) dropCursor(cs *cursorState) {
	delete(d.cursors, cs.id)
	delete(d.takeovers, cs)
	delete(d.byGQ, [2]int64{cs.groupID, cs.queueID})
	d.byQueue[cs.queueID] = slices.DeleteFunc(d.byQueue[cs.queueID], func(x *cursorState) bool { return x == cs })
	if len(d.byQueue[cs.queueID]) == 0 {
		delete(d.byQueue, cs.queueID)
	}
	if gs := d.groups[cs.groupID]; gs != nil {
		gs.cursors = slices.DeleteFunc(gs.cursors, func(x *cursorState) bool { return x == cs })
	}
	for id, j := range d.jobs {
		if j.cursor == cs {
			delete(d.jobs, id)
			if gs := d.groups[cs.groupID]; gs != nil {
				gs.inflightP -= j.job.Parallelism
			}
		}
	}
}

func (d *Dispatcher) releaseGroup(ctx context.Context, id int64) {
	gs := d.groups[id]
	d.commit(ctx)
	ids, held := d.releasable(gs.cursors)
	for _, cs := range slices.Clone(gs.cursors) {
		d.dropCursor(cs)
	}
	d.release(ctx, ids, held)
	delete(d.groups, id)
}

// queueTopic returns the topic id of queue q, reloading the map on a miss.
func (d *Dispatcher) queueTopic(q int64) int64 {
	if t, ok := d.queueTopics[q]; ok {
		return t
	}
	m, err := d.st.QueueTopicIDs(context.Background())
	if err != nil {
		d.log.Warn("read queue topics", "err", err)
		return 0
	}
	d.queueTopics = m
	return m[q]
}
