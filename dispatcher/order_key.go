package dispatcher

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// keyOrder is the orderer of a group ordered by key: one POST per job, parallelism
// 1, so each key has at most one POST open while keys of a queue flow in parallel
// up to the group's max_in_flight (pickKeyed decides what goes). A failed POST
// blocks the keys it carried, retried in place. Keyless messages are not ordered:
// they go, in turns with the keyed ones, as unordered jobs (failures through the
// retry topic). states holds what it remembers per cursor.
type keyOrder struct {
	orderBase
	states map[*cursorState]*keyState
}

// keyState is what a group ordered by key remembers of one cursor: its blocked keys
// (key → the block of the failed POST that carried it; one block may hold several
// keys), the keys whose row in ordered_key_blocks lags behind (dirty), the
// previous owner's key floors (keyfloor.go) and whose turn it is, keyed or keyless
// messages (keylessTurn), so neither waits for the other.
type keyState struct {
	blocks      map[string]*keyBlock
	dirty       map[string]bool
	floors      keyFloors
	keylessTurn bool
}

func newKeyOrder(b orderBase) *keyOrder {
	return &keyOrder{orderBase: b, states: map[*cursorState]*keyState{}}
}

func newKeyState() *keyState {
	return &keyState{blocks: map[string]*keyBlock{}, dirty: map[string]bool{}}
}

// state returns cs's state, made on first use.
func (o *keyOrder) state(cs *cursorState) *keyState {
	ks := o.states[cs]
	if ks == nil {
		ks = newKeyState()
		o.states[cs] = ks
	}
	return ks
}

// cut cuts the next job of cs: a due blocked POST goes again alone with its next
// attempt; nothing at or above the lowest open hole goes (its key is unknown);
// keys waiting on a move into the queue wait (keyWaits).
func (o *keyOrder) cut(ctx context.Context, gs *groupState, cs *cursorState, now time.Time, probe bool) bool {
	g := gs.g
	ks := o.state(cs)
	if ks.floors != nil && cs.takeover == nil {
		ks.settleFloors(cs) // done by the previous owner: never sent again
	}
	if len(cs.pending) == 0 || gs.inflightP >= g.MaxInFlight || cs.takeover != nil {
		return false
	}
	ks.keylessTurn = !ks.keylessTurn
	if ks.keylessTurn && !probe && o.cutKeyless(ctx, gs, cs, now) {
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
	pick := pickKeyed(keyPickIn{pending: cs.pending, busy: busy, blocks: ks.blocks, limit: limit, now: now, batch: g.BatchSize, held: o.moveHeld(cs), freshFirst: probe, freshOnly: probe && gs.probeFresh})
	for _, k := range pick.resolved {
		ks.unblock(k)
	}
	if !pick.wake.IsZero() {
		o.host.wakeBy(pick.wake)
	}
	attempt := 1
	if b := pick.retry; b != nil {
		attempt = b.attempts + 1
	} else if len(pick.take) == 0 {
		return !ks.keylessTurn && !probe && o.cutKeyless(ctx, gs, cs, now)
	} else if g.BatchWindowMS > 0 && len(pick.take) < g.BatchSize && !probe {
		due := time.UnixMilli(cs.pending[pick.take[0]].createdAt).Add(time.Duration(g.BatchWindowMS) * time.Millisecond)
		if now.Before(due) {
			o.host.wakeBy(due)
			return false
		}
	}
	allowed := gs.pace.allow(now, len(pick.take))
	if allowed < 1 || (pick.retry != nil && allowed < len(pick.take)) {
		o.host.wakeBy(gs.pace.next(now, len(pick.take)))
		return false
	}
	gs.pace.take(allowed)
	taken := cs.takeAt(pick.take[:allowed])
	return o.send(ctx, gs, cs, taken, jobShape{parallelism: 1, attempt: attempt, probe: probe, ordered: true}, now)
}

// cutKeyless cuts one unordered job of cs's due keyless messages (up to job_size),
// as an unordered group's cut does.
func (o *keyOrder) cutKeyless(ctx context.Context, gs *groupState, cs *cursorState, now time.Time) bool {
	nowMS := now.UnixMilli()
	var idx []int
	for i, p := range cs.pending {
		if len(idx) == o.cfg.JobSize {
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
		o.host.wakeBy(gs.pace.next(now, len(idx)))
		return false
	}
	gs.pace.take(n)
	taken := cs.takeAt(idx[:n])
	posts := (n + gs.g.BatchSize - 1) / gs.g.BatchSize
	return o.send(ctx, gs, cs, taken, jobShape{parallelism: gs.credits(posts, len(cs.pending) > 0), attempt: 1}, now)
}

// moveHeld returns which keys of cs wait on a move into its queue (keyWaits over
// the moves whose slots hold the key's); nil when no move into the queue is
// unretired.
func (o *keyOrder) moveHeld(cs *cursorState) func(key string) bool {
	moves := o.host.movedFrom(cs)
	if len(moves) == 0 {
		return nil
	}
	sources := make([]moveSource, len(moves))
	slots := make([]map[int]bool, len(moves))
	for i, m := range moves {
		sources[i] = moveSourceOf(m, o, true)
		slots[i] = make(map[int]bool, len(m.move.Slots))
		for _, s := range m.move.Slots {
			slots[i][s] = true
		}
	}
	memo := map[string]bool{}
	return func(key string) bool {
		if w, ok := memo[key]; ok {
			return w
		}
		slot := models.KeySlot(key)
		var from []moveSource
		for i := range moves {
			if slots[i][slot] {
				from = append(from, sources[i])
			}
		}
		w := keyWaits(from, key)
		memo[key] = w
		return w
	}
}

// inPlace returns ip's messages to the to-send set and blocks their keys until
// ip's time (or an operator, when paused).
func (o *keyOrder) inPlace(cs *cursorState, js *jobState, ip *delivery.InPlace) []pendingMsg {
	back := takeBack(cs, js, ip)
	if len(back) == 0 {
		return nil
	}
	var at time.Time
	if !ip.Paused {
		at = time.UnixMilli(ip.AtMS)
		o.host.wakeBy(at)
	}
	o.state(cs).block(back, ip.Attempt, at, ip.Paused, ip.LastError)
	return back
}

// done unblocks key when off is its block's head.
func (o *keyOrder) done(cs *cursorState, off int64, key string) {
	if key == "" {
		return
	}
	if ks := o.states[cs]; ks != nil {
		if b := ks.blocks[key]; b != nil && b.parts[key].head == off {
			ks.unblock(key)
		}
	}
}

// noReport counts a poison job as a failed attempt of its keys' messages, retried
// in place like any failure; past max_attempts its keys wait for an operator.
func (o *keyOrder) noReport(_ context.Context, js *jobState) {
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
	o.host.finishJob(js, 0)
	if cs == nil || len(back) == 0 {
		return
	}
	at := retryAt(g, attempt, o.now())
	o.state(cs).block(back, attempt, at, at.IsZero(), string(delivery.ClassNoReport))
	if !at.IsZero() {
		o.host.wakeBy(at)
	}
}

// takenOver gives cs the floors of done, the offsets the previous owner's ordered
// jobs reported done, from one read of their keys. A read error leaves none: those
// messages may then be sent again out of order.
func (o *keyOrder) takenOver(ctx context.Context, cs *cursorState, done []int64) {
	if len(done) == 0 || !cs.group.g.OrderedByKey() {
		return
	}
	rows, err := o.st.QueueRowsByIDs(ctx, cs.queueID, done)
	if err != nil {
		o.log.Warn("read the keys of the previous owner's deliveries; earlier messages of those keys may be sent again after them", "queue", cs.queueID, "err", err)
		return
	}
	keys := make(map[int64]string, len(rows))
	for _, r := range rows {
		keys[r.ID] = r.Key
	}
	o.state(cs).floors = keyFloorsOf(keys)
}

// blocked reports whether a key of cs is blocked and adds the blocked keys to keys.
func (o *keyOrder) blocked(cs *cursorState, keys map[string]bool) bool {
	ks := o.states[cs]
	if ks == nil {
		return false
	}
	if keys != nil {
		for k := range ks.blocks {
			keys[k] = true
		}
	}
	return len(ks.blocks) > 0
}

// blockedKeys counts the keys of gs's cursors waiting on a failed POST.
func (o *keyOrder) blockedKeys(gs *groupState) int {
	n := 0
	for _, cs := range gs.cursors {
		if ks := o.states[cs]; ks != nil {
			n += len(ks.blocks)
		}
	}
	return n
}

// void forgets cs's state (see orderer.void): with del, every blocked key is
// unblocked and its row goes at the next save.
func (o *keyOrder) void(cs *cursorState, del bool) {
	ks := o.states[cs]
	if ks == nil {
		return
	}
	if !del {
		delete(o.states, cs)
		return
	}
	for k := range ks.blocks {
		ks.unblock(k)
	}
	ks.floors, ks.keylessTurn = nil, false
}

// save writes the changed blocked keys: each dirty key's row from its block, or
// deleted when it is no longer blocked.
func (o *keyOrder) save(ctx context.Context) {
	var set, cleared []models.OrderedKeyBlock
	var saved []*keyState
	for cs, ks := range o.states {
		if len(ks.dirty) == 0 {
			continue
		}
		saved = append(saved, ks)
		for k := range ks.dirty {
			b := ks.blocks[k]
			if b == nil {
				cleared = append(cleared, models.OrderedKeyBlock{GroupID: cs.groupID, QueueID: cs.queueID, Key: k})
				continue
			}
			part := b.parts[k]
			set = append(set, models.OrderedKeyBlock{GroupID: cs.groupID, QueueID: cs.queueID, Key: k, Offset: part.head, Count: part.count,
				Attempts: b.attempts, NextAt: b.at, Paused: b.paused, LastError: b.lastError})
		}
	}
	if len(saved) == 0 {
		return
	}
	if err := o.st.OrderedKeyBlocksSave(ctx, set, cleared); err != nil {
		o.log.Warn("save blocked keys", "err", err)
		return
	}
	for _, ks := range saved {
		clear(ks.dirty)
	}
}

// load reads the blocked keys of the owned groups ordered by key: a newly claimed
// cursor takes them over (each key its own block; attempts go on counting), and an
// operator's skip or resume is applied.
func (o *keyOrder) load(ctx context.Context, groups map[int64]*groupState, at func(group, queue int64) *cursorState, fresh map[*cursorState]bool) bool {
	ids := groupsIn(groups, (*models.Group).OrderedByKey)
	if len(ids) == 0 {
		return false
	}
	rows, err := o.st.OrderedKeyBlocksByGroups(ctx, ids, len(fresh) == 0, 0)
	if err != nil {
		o.log.Warn("read blocked keys", "err", err)
		return false
	}
	dead := false
	for _, r := range rows {
		cs := at(r.GroupID, r.QueueID)
		if cs == nil {
			continue
		}
		ks := o.state(cs)
		if fresh[cs] {
			ks.blocks[r.Key] = &keyBlock{parts: map[string]keyPart{r.Key: {head: r.Offset, count: max(r.Count, 1)}},
				attempts: r.Attempts, at: r.NextAt, paused: r.Paused, lastError: r.LastError}
		}
		b := ks.blocks[r.Key]
		if r.Action == "" || b == nil {
			continue
		}
		switch r.Action {
		case models.OrderedActionResume:
			// The key alone goes again now, with a fresh count of attempts.
			ks.block(ks.messages(cs, r.Key, b), 0, o.now(), false, b.lastError)
		case models.OrderedActionSkip:
			if !o.skip(ctx, cs, ks, r.Key) {
				continue
			}
			dead = true
		}
		if err := o.st.OrderedKeyBlockActionDone(ctx, r.GroupID, r.QueueID, r.Key, r.Action); err != nil {
			o.log.Warn("clear blocked key action", "err", err)
		}
		o.host.wakeBy(o.now())
		o.log.Info("applied operator action on blocked key", "group", r.GroupID, "queue", r.QueueID, "action", r.Action)
	}
	return dead
}

// skip makes the messages key k of cs is blocked on dead letters and unblocks the
// key; false if one of them is in flight or the write failed (tried again at the
// next load).
func (o *keyOrder) skip(ctx context.Context, cs *cursorState, ks *keyState, k string) bool {
	b := ks.blocks[k]
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
	if !o.deadLetter(ctx, cs, fails) {
		return false
	}
	ks.unblock(k)
	return true
}

// unblock drops key k from its block (its head is done); the row goes at the next
// save.
func (ks *keyState) unblock(k string) {
	b := ks.blocks[k]
	if b == nil {
		return
	}
	delete(b.parts, k)
	delete(ks.blocks, k)
	ks.dirty[k] = true
}

// block blocks the keys of back, the messages of a failed POST returned to the
// to-send set, on one block: sent again at at (attempt attempts + 1), or, when
// paused, when an operator acts.
func (ks *keyState) block(back []pendingMsg, attempts int, at time.Time, paused bool, lastError string) {
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
		if old := ks.blocks[k]; old != nil {
			delete(old.parts, k)
		}
		ks.blocks[k] = b
		ks.dirty[k] = true
	}
}

// messages returns the waiting messages of key k of cs that its block holds (its
// head and the part's count after it), or a stand-in head when none was read yet.
func (ks *keyState) messages(cs *cursorState, k string, b *keyBlock) []pendingMsg {
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
