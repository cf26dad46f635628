package dispatcher

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// lowestHole returns c's lowest open hole, if any.
func (c *cursorState) lowestHole() (id int64, ok bool) {
	for h := range c.holes {
		if !ok || h < id {
			id, ok = h, true
		}
	}
	return id, ok
}

// orderedBlock is an ordered cursor stopped on its head (models.OrderedBlock): count
// messages from offset failed attempts times and are sent again at at; paused waits
// for an operator. saved is false while the row in ordered_blocks lags behind.
type orderedBlock struct {
	offset    int64
	count     int
	attempts  int
	at        time.Time
	paused    bool
	lastError string
}

// cutOrdered cuts the next job of an ordered cursor (ordered groups): at
// most one job per cursor in flight, with parallelism 1, holding the lowest undone
// offsets in order, so one POST at a time goes out per (group, queue) in offset
// order. A blocked head waits for its retry time (or an operator when paused) and
// is then sent alone, as the same messages, with its next attempt number; nothing
// behind it goes first. A returned head that is not yet due holds the queue too.
func (d *Dispatcher) cutOrdered(ctx context.Context, gs *groupState, cs *cursorState, now time.Time, probe bool) bool {
	g := gs.g
	if len(cs.pending) == 0 || cs.jobs > 0 || len(cs.inflight) > 0 || gs.inflightP >= g.MaxInFlight || cs.takeover != nil {
		return false
	}
	if d.moveHeldQueue(gs, cs) {
		return false // a move into this queue: the sealed queue goes first
	}
	nowMS := now.UnixMilli()
	head := cs.pending[0]
	// An open hole is an id allocated but not yet seen committed (another api
	// process's flush, or a rollback): nothing above it may go before it. The poll
	// re-reads it (every 250 ms while one is open); a rollback holds the queue until
	// gap_timeout closes it.
	hole, holed := cs.lowestHole()
	if holed && hole < head.offset {
		return false
	}
	n, attempt, limit := d.cfg.JobSize, 1, int64(-1)
	if probe {
		n = g.BatchSize
	}
	if b := cs.block; b != nil {
		switch {
		case head.offset == b.offset:
			if b.paused {
				return false
			}
			if now.Before(b.at) {
				d.wakeBy(b.at)
				return false
			}
			n, attempt = min(n, b.count), b.attempts+1
		case head.offset < b.offset:
			limit = b.offset // re-sent from the commit after a takeover: up to the block
		default:
			cs.clearBlock() // its head is done (dead-lettered or skipped)
		}
	}
	if holed && (limit < 0 || hole < limit) {
		limit = hole // the job ends below the hole
	}
	if head.notBefore > nowMS {
		d.wakeBy(time.UnixMilli(head.notBefore))
		return false
	}
	if attempt == 1 && g.BatchWindowMS > 0 && len(cs.pending) < g.BatchSize && !probe {
		due := time.UnixMilli(head.createdAt).Add(time.Duration(g.BatchWindowMS) * time.Millisecond)
		if now.Before(due) {
			d.wakeBy(due)
			return false
		}
	}
	take := 0
	for _, p := range cs.pending {
		if take == n || p.notBefore > nowMS || (limit >= 0 && p.offset >= limit) {
			break
		}
		take++
	}
	if take = gs.pace.allow(now, take); take < 1 {
		d.wakeBy(gs.pace.next(now, 1))
		return false
	}
	taken := cs.pending[:take:take]
	cs.pending = cs.pending[take:]
	gs.pace.take(take)
	offsets := make([]int64, take)
	for i, t := range taken {
		offsets[i] = t.offset
	}
	j := delivery.Job{Group: g.ID, Queue: cs.queueID, Version: cs.version, Owner: d.id, Offsets: delivery.Ranges(offsets),
		Parallelism: 1, Attempt: attempt, Probe: probe, Ordered: true, LastThrottle: lastThrottle(taken), Messages: carried(taken)}
	return d.startJob(ctx, &jobState{job: j, group: gs, cursor: cs}, taken, now)
}

// takeBack removes from in flight the messages of ip's failed POST that js still
// holds and returns them, in offset order, ready to be sent again.
func takeBack(cs *cursorState, js *jobState, ip *delivery.InPlace) []pendingMsg {
	var back []pendingMsg
	for _, off := range delivery.Expand(ip.Offsets) {
		inf, ok := cs.inflight[off]
		if !ok || inf.job != js {
			continue
		}
		delete(cs.inflight, off)
		delete(js.remaining, off)
		back = append(back, pendingMsg{offset: off, createdAt: inf.createdAt, returns: inf.returns, key: inf.key})
	}
	return back
}

// applyInPlace takes an ordered job's failed POST back from in flight: its messages
// return to the head of the to-send set and the cursor is blocked on them until
// ip's time (or an operator, when paused).
func (d *Dispatcher) applyInPlace(cs *cursorState, js *jobState, ip *delivery.InPlace) []pendingMsg {
	back := takeBack(cs, js, ip)
	if len(back) == 0 {
		return nil
	}
	b := &orderedBlock{offset: back[0].offset, count: len(back), attempts: ip.Attempt, paused: ip.Paused, lastError: ip.LastError}
	if !ip.Paused {
		b.at = time.UnixMilli(ip.AtMS)
		d.wakeBy(b.at)
	}
	cs.block, cs.blockDirty = b, true
	return back
}

// clearBlock unblocks the cursor; the row goes at the next commit.
func (c *cursorState) clearBlock() {
	if c.block != nil {
		c.block, c.blockDirty = nil, true
	}
}

// saveBlocks writes changed blocks with the commits, so stats, console and a next
// owner see them within a commit interval.
func (d *Dispatcher) saveBlocks(ctx context.Context) {
	var set []models.OrderedBlock
	var cleared [][2]int64
	var saved []*cursorState
	var keySet, keyCleared []models.OrderedKeyBlock
	var keySaved []*cursorState
	for _, cs := range d.cursors {
		if len(cs.keysDirty) > 0 {
			keySet, keyCleared = cs.saveKeyBlocks(keySet, keyCleared)
			keySaved = append(keySaved, cs)
		}
		if !cs.blockDirty {
			continue
		}
		saved = append(saved, cs)
		if b := cs.block; b != nil {
			set = append(set, models.OrderedBlock{GroupID: cs.groupID, QueueID: cs.queueID, Offset: b.offset, Count: b.count,
				Attempts: b.attempts, NextAt: b.at, Paused: b.paused, LastError: b.lastError})
		} else {
			cleared = append(cleared, [2]int64{cs.groupID, cs.queueID})
		}
	}
	if err := d.st.OrderedKeyBlocksSave(ctx, keySet, keyCleared); err != nil {
		d.log.Warn("save blocked keys", "err", err)
	} else {
		for _, cs := range keySaved {
			clear(cs.keysDirty)
		}
	}
	if err := d.st.OrderedBlocksSave(ctx, set, cleared); err != nil {
		d.log.Warn("save ordered blocks", "err", err)
		return
	}
	for _, cs := range saved {
		cs.blockDirty = false
	}
}

// loadBlocks reads the blocked queues of the owned ordered groups: a newly claimed
// cursor takes over its block (attempts go on counting), and an operator's skip or
// resume is applied.
func (d *Dispatcher) loadBlocks(ctx context.Context, fresh map[*cursorState]bool) {
	d.loadKeyBlocks(ctx, fresh)
	var ids []int64
	for id, gs := range d.groups {
		if gs.g.Ordered {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	rows, err := d.st.OrderedBlocksByGroups(ctx, ids, len(fresh) == 0)
	if err != nil {
		d.log.Warn("read ordered blocks", "err", err)
		return
	}
	for _, r := range rows {
		cs := d.byGQ[[2]int64{r.GroupID, r.QueueID}]
		if cs == nil {
			continue
		}
		if fresh[cs] {
			cs.block = &orderedBlock{offset: r.Offset, count: r.Count, attempts: r.Attempts, at: r.NextAt, paused: r.Paused, lastError: r.LastError}
		}
		if r.Action == "" || cs.block == nil {
			continue
		}
		switch r.Action {
		case models.OrderedActionResume:
			cs.block.paused, cs.block.attempts, cs.block.at = false, 0, d.now()
			cs.blockDirty = true
		case models.OrderedActionSkip:
			if !d.skipBlock(ctx, cs) {
				continue
			}
		}
		if err := d.st.OrderedBlockActionDone(ctx, r.GroupID, r.QueueID, r.Action); err != nil {
			d.log.Warn("clear ordered block action", "err", err)
		}
		d.log.Info("applied operator action on blocked ordered queue", "group", r.GroupID, "queue", r.QueueID, "action", r.Action)
	}
}

// skipBlock makes the blocked messages dead letters and moves the queue on; false if
// they are in flight now or the write failed (tried again at the next rebalance).
func (d *Dispatcher) skipBlock(ctx context.Context, cs *cursorState) bool {
	b := cs.block
	if cs.jobs > 0 {
		return false
	}
	var fails []store.Failure
	for i := 0; i < len(cs.pending) && len(fails) < b.count; i++ {
		if p := cs.pending[i]; p.offset >= b.offset {
			fails = append(fails, store.Failure{QueueID: cs.queueID, Offset: p.offset, Attempt: max(b.attempts, 1), LastError: "skipped: " + b.lastError})
		}
	}
	g := cs.group.g
	if len(fails) > 0 {
		if _, err := d.st.RetryRecord(ctx, g.ID, 1, g.RetrySchedule, fails); err != nil {
			d.log.Warn("dead-letter skipped ordered messages", "group", g.Name, "err", err)
			return false
		}
		d.outboxDue = true
	}
	done := map[int64]bool{}
	for _, f := range fails {
		done[f.Offset] = true
	}
	keep := cs.pending[:0]
	for _, p := range cs.pending {
		if !done[p.offset] {
			keep = append(keep, p)
		}
	}
	cs.pending = keep
	for off := range done {
		cs.markDone(off)
	}
	cs.clearBlock()
	d.wakeBy(d.now())
	return true
}

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
func (d *Dispatcher) releasable(css []*cursorState) (free []int64, held map[time.Duration][]int64) {
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

// release gives up cursors (see releasable).
func (d *Dispatcher) release(ctx context.Context, free []int64, held map[time.Duration][]int64) {
	if err := d.st.CursorsRelease(ctx, d.id, free); err != nil {
		d.log.Warn("release cursors", "err", err)
	}
	for hold, ids := range held {
		if err := d.st.CursorsReleaseHeld(ctx, d.id, ids, hold); err != nil {
			d.log.Warn("release held cursors", "err", err)
		}
	}
}

// orderedNoReport counts a poison ordered job as a failed attempt of its messages,
// retried in place like any failure (never through the retry topic); past
// max_attempts it is blocked for an operator, since without a report the
// dispatcher cannot tell which message is at fault.
func (d *Dispatcher) orderedNoReport(js *jobState) {
	cs, g := js.cursor, js.group.g
	first := int64(-1)
	for off := range js.remaining {
		if first < 0 || off < first {
			first = off
		}
	}
	attempt := max(js.job.Attempt, 1)
	n := len(js.remaining)
	d.finishJob(js, 0)
	if cs == nil || first < 0 {
		return
	}
	b := &orderedBlock{offset: first, count: min(n, g.BatchSize), attempts: attempt, lastError: string(delivery.ClassNoReport)}
	if attempt >= g.MaxAttempts {
		b.paused = true
	} else {
		b.at = d.now().Add(models.RetryDelay(g.RetrySchedule, attempt+1))
		d.wakeBy(b.at)
	}
	cs.block, cs.blockDirty = b, true
}
