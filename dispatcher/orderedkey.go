package dispatcher

import (
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// cutOrderedKey cuts the next job of a cursor of a group ordered by key
// (pickKeyed decides what): one POST per job, parallelism 1, so each key has at
// most one POST open while keys of the queue flow in parallel up to the group's
// max_in_flight. A due blocked POST goes again alone with its next attempt. Nothing
// at or above the lowest open hole goes (its key is unknown). Keyless messages are
// not ordered: they go, in turns with the keyed ones, as unordered jobs (failures
// through the retry topic).
func (d *Dispatcher) cutOrderedKey(ctx context.Context, gs *groupState, cs *cursorState, now time.Time, probe bool) bool {
	g := gs.g
	if cs.block != nil {
		cs.clearBlock() // a block left from ordering by queue is void
	}
	if cs.floors != nil && cs.takeover == nil {
		cs.settleKeyFloors() // done by the previous owner: never sent again
	}
	if len(cs.pending) == 0 || gs.inflightP >= g.MaxInFlight || cs.takeover != nil {
		return false
	}
	cs.keylessTurn = !cs.keylessTurn
	if cs.keylessTurn && !probe && d.cutKeyless(ctx, gs, cs, now) {
		return true
	}
	limit := int64(-1)
	if hole, ok := cs.lowestHole(); ok {
		limit = hole
	}
	busy := map[string]bool{}
	for _, inf := range cs.inflight {
		if inf.key != "" {
			busy[inf.key] = true
		}
	}
	pick := pickKeyed(keyPickIn{pending: cs.pending, busy: busy, blocks: cs.keyBlocks, limit: limit, now: now, batch: g.BatchSize, held: d.moveHeldKey(gs, cs)})
	for _, k := range pick.resolved {
		cs.unblockKey(k)
	}
	if !pick.wake.IsZero() {
		d.wakeBy(pick.wake)
	}
	attempt := 1
	if b := pick.retry; b != nil {
		attempt = b.attempts + 1
	} else if len(pick.take) == 0 {
		return !cs.keylessTurn && !probe && d.cutKeyless(ctx, gs, cs, now)
	} else if g.BatchWindowMS > 0 && len(pick.take) < g.BatchSize && !probe {
		due := time.UnixMilli(cs.pending[pick.take[0]].createdAt).Add(time.Duration(g.BatchWindowMS) * time.Millisecond)
		if now.Before(due) {
			d.wakeBy(due)
			return false
		}
	}
	allowed := gs.pace.allow(now, len(pick.take))
	if allowed < 1 || (pick.retry != nil && allowed < len(pick.take)) {
		d.wakeBy(gs.pace.next(now, len(pick.take)))
		return false
	}
	take := pick.take[:allowed]
	gs.pace.take(len(take))
	taken := make([]pendingMsg, len(take))
	offsets := make([]int64, len(take))
	drop := make(map[int]bool, len(take))
	for i, idx := range take {
		taken[i], offsets[i], drop[idx] = cs.pending[idx], cs.pending[idx].offset, true
	}
	keep := cs.pending[:0]
	for i, p := range cs.pending {
		if !drop[i] {
			keep = append(keep, p)
		}
	}
	cs.pending = keep
	j := delivery.Job{Group: g.ID, Queue: cs.queueID, Version: cs.version, Owner: d.id, Offsets: delivery.Ranges(offsets),
		Parallelism: 1, Attempt: attempt, Probe: probe, Ordered: true, LastThrottle: lastThrottle(taken), Messages: carried(taken)}
	return d.startJob(ctx, &jobState{job: j, group: gs, cursor: cs}, taken, now)
}

// cutKeyless cuts one unordered job of cs's due keyless messages (up to job_size),
// as cutOne does for an unordered group.
func (d *Dispatcher) cutKeyless(ctx context.Context, gs *groupState, cs *cursorState, now time.Time) bool {
	g := gs.g
	nowMS := now.UnixMilli()
	var idx []int
	for i, p := range cs.pending {
		if len(idx) == d.cfg.JobSize {
			break
		}
		if p.key == "" && p.notBefore <= nowMS {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return false
	}
	n := gs.pace.allow(now, len(idx))
	if n < 1 {
		d.wakeBy(gs.pace.next(now, len(idx)))
		return false
	}
	idx = idx[:n]
	gs.pace.take(n)
	taken := make([]pendingMsg, n)
	offsets := make([]int64, n)
	drop := make(map[int]bool, n)
	for i, k := range idx {
		taken[i], offsets[i], drop[k] = cs.pending[k], cs.pending[k].offset, true
	}
	keep := cs.pending[:0]
	for i, p := range cs.pending {
		if !drop[i] {
			keep = append(keep, p)
		}
	}
	cs.pending = keep
	posts := (n + g.BatchSize - 1) / g.BatchSize
	j := delivery.Job{Group: g.ID, Queue: cs.queueID, Version: cs.version, Owner: d.id, Offsets: delivery.Ranges(offsets),
		Parallelism: gs.credits(posts, len(cs.pending) > 0), Attempt: 1, LastThrottle: lastThrottle(taken), Messages: carried(taken)}
	return d.startJob(ctx, &jobState{job: j, group: gs, cursor: cs}, taken, now)
}

// unblockKey drops key k from its block (its head is done); the row goes at the
// next commit.
func (c *cursorState) unblockKey(k string) {
	b := c.keyBlocks[k]
	if b == nil {
		return
	}
	delete(b.parts, k)
	delete(c.keyBlocks, k)
	c.keysDirty[k] = true
}

// keyDone unblocks key k when off, a message of k now done, is its block's head.
func (c *cursorState) keyDone(off int64, k string) {
	if b := c.keyBlocks[k]; b != nil && b.parts[k].head == off {
		c.unblockKey(k)
	}
}

// clearKeyBlocks unblocks every key (the group no longer orders by key).
func (c *cursorState) clearKeyBlocks() {
	for k := range c.keyBlocks {
		c.unblockKey(k)
	}
}

// blockKeys blocks the keys of back, the messages of a failed POST returned to the
// to-send set, on one block: sent again at at (attempt attempts + 1), or, when
// paused, when an operator acts.
func (c *cursorState) blockKeys(back []pendingMsg, attempts int, at time.Time, paused bool, lastError string) {
	b := &keyBlock{parts: map[string]keyPart{}, attempts: attempts, at: at, paused: paused, lastError: lastError}
	for _, p := range back {
		if p.key == "" {
			continue
		}
		part, ok := b.parts[p.key]
		if !ok || p.offset < part.head {
			part.head = p.offset
		}
		part.count++
		b.parts[p.key] = part
	}
	for k := range b.parts {
		if old := c.keyBlocks[k]; old != nil {
			delete(old.parts, k)
		}
		c.keyBlocks[k] = b
		c.keysDirty[k] = true
	}
}

// applyInPlaceKey takes a failed POST of a group ordered by key back from in
// flight: its messages return to the to-send set and their keys are blocked until
// ip's time (or an operator, when paused).
func (d *Dispatcher) applyInPlaceKey(cs *cursorState, js *jobState, ip *delivery.InPlace) []pendingMsg {
	back := takeBack(cs, js, ip)
	if len(back) == 0 {
		return nil
	}
	var at time.Time
	if !ip.Paused {
		at = time.UnixMilli(ip.AtMS)
		d.wakeBy(at)
	}
	cs.blockKeys(back, ip.Attempt, at, ip.Paused, ip.LastError)
	return back
}

// orderedKeyNoReport counts a poison job of a group ordered by key as a failed
// attempt of its keys' messages, retried in place like any failure; past
// max_attempts its keys wait for an operator.
func (d *Dispatcher) orderedKeyNoReport(js *jobState) {
	cs, g := js.cursor, js.group.g
	var back []pendingMsg
	if cs != nil {
		for off := range js.remaining {
			if inf, ok := cs.inflight[off]; ok && inf.job == js {
				back = append(back, pendingMsg{offset: off, key: inf.key})
			}
		}
	}
	attempt := max(js.job.Attempt, 1)
	d.finishJob(js, 0)
	if cs == nil || len(back) == 0 {
		return
	}
	if attempt >= g.MaxAttempts {
		cs.blockKeys(back, attempt, time.Time{}, true, string(delivery.ClassNoReport))
		return
	}
	at := d.now().Add(models.RetryDelay(g.RetrySchedule, attempt+1))
	cs.blockKeys(back, attempt, at, false, string(delivery.ClassNoReport))
	d.wakeBy(at)
}

// blockedKeys counts the keys of gs's cursors waiting on a failed POST.
func (gs *groupState) blockedKeys() int {
	n := 0
	for _, cs := range gs.cursors {
		n += len(cs.keyBlocks)
	}
	return n
}

// saveKeyBlocks adds the changed blocked keys to a save: each dirty key's row is
// written from its block, or deleted when it is no longer blocked.
func (cs *cursorState) saveKeyBlocks(set, cleared []models.OrderedKeyBlock) ([]models.OrderedKeyBlock, []models.OrderedKeyBlock) {
	for k := range cs.keysDirty {
		b := cs.keyBlocks[k]
		if b == nil {
			cleared = append(cleared, models.OrderedKeyBlock{GroupID: cs.groupID, QueueID: cs.queueID, Key: k})
			continue
		}
		part := b.parts[k]
		set = append(set, models.OrderedKeyBlock{GroupID: cs.groupID, QueueID: cs.queueID, Key: k, Offset: part.head, Count: part.count,
			Attempts: b.attempts, NextAt: b.at, Paused: b.paused, LastError: b.lastError})
	}
	return set, cleared
}

// loadKeyBlocks reads the blocked keys of the owned groups ordered by key: a newly
// claimed cursor takes them over (each key its own block; attempts go on counting),
// and an operator's skip or resume is applied.
func (d *Dispatcher) loadKeyBlocks(ctx context.Context, fresh map[*cursorState]bool) {
	var ids []int64
	for id, gs := range d.groups {
		if gs.g.OrderedByKey() {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	rows, err := d.st.OrderedKeyBlocksByGroups(ctx, ids, len(fresh) == 0, 0)
	if err != nil {
		d.log.Warn("read blocked keys", "err", err)
		return
	}
	for _, r := range rows {
		cs := d.byGQ[[2]int64{r.GroupID, r.QueueID}]
		if cs == nil {
			continue
		}
		if fresh[cs] {
			cs.keyBlocks[r.Key] = &keyBlock{parts: map[string]keyPart{r.Key: {head: r.Offset, count: max(r.Count, 1)}},
				attempts: r.Attempts, at: r.NextAt, paused: r.Paused, lastError: r.LastError}
		}
		b := cs.keyBlocks[r.Key]
		if r.Action == "" || b == nil {
			continue
		}
		switch r.Action {
		case models.OrderedActionResume:
			// The key alone goes again now, with a fresh count of attempts.
			cs.blockKeys(d.keyMessages(cs, r.Key, b), 0, d.now(), false, b.lastError)
		case models.OrderedActionSkip:
			if !d.skipKey(ctx, cs, r.Key) {
				continue
			}
		}
		if err := d.st.OrderedKeyBlockActionDone(ctx, r.GroupID, r.QueueID, r.Key, r.Action); err != nil {
			d.log.Warn("clear blocked key action", "err", err)
		}
		d.wakeBy(d.now())
		d.log.Info("applied operator action on blocked key", "group", r.GroupID, "queue", r.QueueID, "action", r.Action)
	}
}

// keyMessages returns the waiting messages of key k that its block holds (its head
// and the part's count after it), or a stand-in head when none was read yet.
func (d *Dispatcher) keyMessages(cs *cursorState, k string, b *keyBlock) []pendingMsg {
	part := b.parts[k]
	var out []pendingMsg
	for _, p := range cs.pending {
		if p.key == k && p.offset >= part.head && len(out) < part.count {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = []pendingMsg{{offset: part.head, key: k}}
	}
	return out
}

// skipKey makes the messages key k of cs is blocked on dead letters and unblocks
// the key; false if one of them is in flight or the write failed (tried again at
// the next rebalance).
func (d *Dispatcher) skipKey(ctx context.Context, cs *cursorState, k string) bool {
	b := cs.keyBlocks[k]
	if b == nil {
		return true
	}
	part := b.parts[k]
	for _, inf := range cs.inflight {
		if inf.key == k {
			return false
		}
	}
	var fails []store.Failure
	for _, p := range cs.pending {
		if p.key == k && p.offset >= part.head && len(fails) < part.count {
			fails = append(fails, store.Failure{QueueID: cs.queueID, Offset: p.offset, Attempt: max(b.attempts, 1), LastError: "skipped: " + b.lastError})
		}
	}
	if len(fails) == 0 && part.head > cs.readPos {
		return false // not read yet (a new owner): skip it once it is
	}
	g := cs.group.g
	if len(fails) > 0 {
		if _, err := d.st.RetryRecord(ctx, g.ID, 1, g.RetrySchedule, fails); err != nil {
			d.log.Warn("dead-letter skipped blocked key", "group", g.Name, "err", err)
			return false
		}
		d.outboxDue = true
	}
	done := map[int64]bool{}
	for _, f := range fails {
		done[f.Offset] = true
	}
	cs.pending = slices.DeleteFunc(cs.pending, func(p pendingMsg) bool { return done[p.offset] })
	for off := range done {
		cs.markDone(off)
	}
	cs.unblockKey(k)
	return true
}
