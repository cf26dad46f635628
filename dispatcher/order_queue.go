package dispatcher

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// orderedBlock is an ordered cursor stopped on its head (models.OrderedBlock): count
// messages from offset failed attempts times and are sent again at at; paused waits
// for an operator.
type orderedBlock struct {
	offset    int64
	count     int
	attempts  int
	at        time.Time
	paused    bool
	lastError string
}

// queueOrder is the orderer of a group ordered by queue (RocketMQ's orderly
// consumption): at most one job per cursor in flight, with parallelism 1, holding
// the lowest undone offsets in order, so one POST at a time goes out per (group,
// queue) in offset order. A failed POST blocks the queue on its head (blocks),
// retried in place; dirty lists the cursors whose row in ordered_blocks lags
// behind their block.
type queueOrder struct {
	orderBase
	blocks map[*cursorState]*orderedBlock
	dirty  map[*cursorState]bool
}

func newQueueOrder(b orderBase) *queueOrder {
	return &queueOrder{orderBase: b, blocks: map[*cursorState]*orderedBlock{}, dirty: map[*cursorState]bool{}}
}

// setBlock blocks cs on b (nil unblocks it); the row follows at the next save.
func (o *queueOrder) setBlock(cs *cursorState, b *orderedBlock) {
	if b == nil && o.blocks[cs] == nil {
		return
	}
	if b == nil {
		delete(o.blocks, cs)
	} else {
		o.blocks[cs] = b
	}
	o.dirty[cs] = true
}

// cut cuts the next job of cs. A blocked head waits for its retry time (or an
// operator when paused) and is then sent alone, as the same messages, with its next
// attempt number; nothing behind it goes first. A returned head not yet due holds
// the queue too, and so does a move into it until the sealed queue is done.
func (o *queueOrder) cut(ctx context.Context, gs *groupState, cs *cursorState, now time.Time, probe bool) bool {
	g := gs.g
	if len(cs.pending) == 0 || cs.jobs > 0 || len(cs.inflight) > 0 || gs.inflightP >= g.MaxInFlight || cs.takeover != nil {
		return false
	}
	if o.moveHeld(cs) {
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
	n, attempt, limit := o.cfg.JobSize, 1, int64(-1)
	if probe {
		n = g.BatchSize
	}
	if b := o.blocks[cs]; b != nil {
		switch {
		case head.offset == b.offset:
			if b.paused || (probe && gs.probeFresh) {
				return false // paused, or the probe's first pass: a queue with fresh messages goes first
			}
			if now.Before(b.at) {
				o.host.wakeBy(b.at)
				return false
			}
			n, attempt = min(n, b.count), b.attempts+1
		case head.offset < b.offset:
			limit = b.offset // re-sent from the commit after a takeover: up to the block
		default:
			o.setBlock(cs, nil) // its head is done (dead-lettered or skipped)
		}
	}
	if holed && (limit < 0 || hole < limit) {
		limit = hole // the job ends below the hole
	}
	if head.notBefore > nowMS {
		o.host.wakeBy(time.UnixMilli(head.notBefore))
		return false
	}
	if attempt == 1 && g.BatchWindowMS > 0 && len(cs.pending) < g.BatchSize && !probe {
		due := time.UnixMilli(head.createdAt).Add(time.Duration(g.BatchWindowMS) * time.Millisecond)
		if now.Before(due) {
			o.host.wakeBy(due)
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
		o.host.wakeBy(gs.pace.next(now, 1))
		return false
	}
	taken := cs.pending[:take:take]
	cs.pending = cs.pending[take:]
	gs.pace.take(take)
	return o.send(ctx, gs, cs, taken, jobShape{parallelism: 1, attempt: attempt, probe: probe, ordered: true}, now)
}

// moveHeld reports whether cs waits on a move into its queue (queueWaits).
func (o *queueOrder) moveHeld(cs *cursorState) bool {
	moves := o.host.movedFrom(cs)
	if len(moves) == 0 {
		return false
	}
	sources := make([]moveSource, len(moves))
	for i, m := range moves {
		sources[i] = moveSourceOf(m, o, false)
	}
	return queueWaits(sources)
}

// inPlace returns ip's messages to the head of the to-send set and blocks the
// cursor on them until ip's time (or an operator, when paused).
func (o *queueOrder) inPlace(cs *cursorState, js *jobState, ip *delivery.InPlace) []pendingMsg {
	back := takeBack(cs, js, ip)
	if len(back) == 0 {
		return nil
	}
	b := &orderedBlock{offset: back[0].offset, count: len(back), attempts: ip.Attempt, paused: ip.Paused, lastError: ip.LastError}
	if !ip.Paused {
		b.at = time.UnixMilli(ip.AtMS)
		o.host.wakeBy(b.at)
	}
	o.setBlock(cs, b)
	return back
}

// done unblocks cs when off is its block's head (it went out, or became a dead letter).
func (o *queueOrder) done(cs *cursorState, off int64, _ string) {
	if b := o.blocks[cs]; b != nil && b.offset == off {
		o.setBlock(cs, nil)
	}
}

// noReport counts a poison job as a failed attempt of its messages, retried in
// place like any failure (never through the retry topic); past max_attempts it is
// blocked for an operator, since without a report the dispatcher cannot tell which
// message is at fault.
func (o *queueOrder) noReport(_ context.Context, js *jobState) {
	cs, g := js.cursor, js.group.g
	first := int64(-1)
	for off := range js.remaining {
		if first < 0 || off < first {
			first = off
		}
	}
	attempt := max(js.job.Attempt, 1)
	n := len(js.remaining)
	o.host.finishJob(js, 0)
	if cs == nil || first < 0 {
		return
	}
	b := &orderedBlock{offset: first, count: min(n, g.BatchSize), attempts: attempt, lastError: string(delivery.ClassNoReport)}
	if b.at = retryAt(g, attempt, o.now()); b.at.IsZero() {
		b.paused = true
	} else {
		o.host.wakeBy(b.at)
	}
	o.setBlock(cs, b)
}

// takenOver keeps nothing: the block row carries over (load).
func (o *queueOrder) takenOver(context.Context, *cursorState, []int64) {}

// blocked reports whether cs is blocked.
func (o *queueOrder) blocked(cs *cursorState, _ map[string]bool) bool { return o.blocks[cs] != nil }

// void forgets cs's block (see orderer.void).
func (o *queueOrder) void(cs *cursorState, del bool) {
	if del {
		o.setBlock(cs, nil)
		return
	}
	delete(o.blocks, cs)
	delete(o.dirty, cs)
}

// save writes the changed blocks with the commits, so stats, console and a next
// owner see them within a commit interval.
func (o *queueOrder) save(ctx context.Context) {
	if len(o.dirty) == 0 {
		return
	}
	var set []models.OrderedBlock
	var cleared [][2]int64
	for cs := range o.dirty {
		if b := o.blocks[cs]; b != nil {
			set = append(set, models.OrderedBlock{GroupID: cs.groupID, QueueID: cs.queueID, Offset: b.offset, Count: b.count,
				Attempts: b.attempts, NextAt: b.at, Paused: b.paused, LastError: b.lastError})
		} else {
			cleared = append(cleared, [2]int64{cs.groupID, cs.queueID})
		}
	}
	if err := o.st.OrderedBlocksSave(ctx, set, cleared); err != nil {
		o.log.Warn("save ordered blocks", "err", err)
		return
	}
	clear(o.dirty)
}

// load reads the blocked queues of the owned ordered groups: a newly claimed cursor
// ordered by queue takes over its block (attempts go on counting), one ordered by
// key deletes it (void), and an operator's skip or resume is applied.
func (o *queueOrder) load(ctx context.Context, groups map[int64]*groupState, at func(group, queue int64) *cursorState, fresh map[*cursorState]bool) bool {
	ids := groupsIn(groups, func(g *models.Group) bool { return g.Ordered })
	if len(ids) == 0 {
		return false
	}
	rows, err := o.st.OrderedBlocksByGroups(ctx, ids, len(fresh) == 0)
	if err != nil {
		o.log.Warn("read ordered blocks", "err", err)
		return false
	}
	dead := false
	for _, r := range rows {
		cs := at(r.GroupID, r.QueueID)
		if cs == nil {
			continue
		}
		if fresh[cs] && cs.group.g.OrderedByKey() {
			o.dirty[cs] = true // left from ordering by queue: void
			continue
		}
		if fresh[cs] {
			o.blocks[cs] = &orderedBlock{offset: r.Offset, count: r.Count, attempts: r.Attempts, at: r.NextAt, paused: r.Paused, lastError: r.LastError}
		}
		b := o.blocks[cs]
		if r.Action == "" || b == nil {
			continue
		}
		switch r.Action {
		case models.OrderedActionResume:
			o.setBlock(cs, &orderedBlock{offset: b.offset, count: b.count, at: o.now(), lastError: b.lastError})
		case models.OrderedActionSkip:
			if !o.skip(ctx, cs, b) {
				continue
			}
			dead = true
		}
		if err := o.st.OrderedBlockActionDone(ctx, r.GroupID, r.QueueID, r.Action); err != nil {
			o.log.Warn("clear ordered block action", "err", err)
		}
		o.log.Info("applied operator action on blocked ordered queue", "group", r.GroupID, "queue", r.QueueID, "action", r.Action)
	}
	return dead
}

// skip makes the blocked messages dead letters and moves the queue on; false if
// they are in flight now or the write failed (tried again at the next load).
func (o *queueOrder) skip(ctx context.Context, cs *cursorState, b *orderedBlock) bool {
	if cs.jobs > 0 {
		return false
	}
	var fails []store.Failure
	for i := 0; i < len(cs.pending) && len(fails) < b.count; i++ {
		if p := cs.pending[i]; p.offset >= b.offset {
			fails = append(fails, store.Failure{QueueID: cs.queueID, Offset: p.offset, Attempt: max(b.attempts, 1), LastError: "skipped: " + b.lastError})
		}
	}
	if !o.deadLetter(ctx, cs, fails) {
		return false
	}
	o.setBlock(cs, nil)
	o.host.wakeBy(o.now())
	return true
}
