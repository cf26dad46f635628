package dispatcher

import (
	"cmp"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

// pendingMsg is a message read and due to be sent. A cursor keeps them in offset
// order, returned ones back in their place, so the oldest is sent first.
type pendingMsg struct {
	offset    int64
	createdAt int64  // Unix ms, for lag seconds
	notBefore int64  // Unix ms; 0 = now
	returns   int    // times returned after a failed POST, for back-off
	throttles int    // POSTs in a row that carried it and were throttled (delivery.ThrottleLimit)
	key       string // message key; a group ordered by key orders on it
	// msg is the whole message when a local notification carried it (read-only,
	// shared by every cursor of the queue); the job then carries it to the worker,
	// which skips loading it. Returned messages do not keep it.
	msg *models.Message
}

type inflightMsg struct {
	job       *jobState
	createdAt int64
	returns   int
	throttles int
	key       string
}

// cursorState is the owner's in-memory view of one cursor; holes are tracked, never skipped.
// It knows no ordering mode: what a mode remembers of it lives in the group's
// orderer (order.go).
// Every offset ≤ committed is done except the ids in holes and late that are ≤
// committed: the commit moves on over open holes and over messages still pending or
// in flight, listing them, so one slow or throttled message never freezes it. Every
// id in (committed, readPos] is done, a hole, pending or in flight.
type cursorState struct {
	id, groupID, queueID int64
	version              int64
	group                *groupState

	committed int64
	// durable is the last commit that succeeded (or the claim): what a successor
	// would start from, and what decides which report entries may be trimmed
	// (reportlog.go).
	durable durable
	readPos int64
	holes   map[int64]int64 // open hole id → first seen, Unix ms
	late    map[int64]int64 // read rows ≤ committed not yet done (pending, in flight) → first seen or created, Unix ms
	closed  map[int64]int64 // holes closed as rollbacks → when to check them once more (Unix ms)
	beyond  bool            // committed past the table's MAX(id): not served until the table catches up (queueReader.checkBeyond)
	// beyondSince is when beyond was first seen; beyondFlagged says the queue was
	// made read-only for it (beyond for beyondConfirm).
	beyondSince   time.Time
	beyondFlagged bool
	pending       []pendingMsg
	inflight      map[int64]inflightMsg
	done          map[int64]struct{} // done offsets above committed
	jobs          int
	dirty         bool      // changed since the last commit
	takeover      *takeover // claimed from another owner, not served until its reports are applied
	ranges        int       // listed ranges ≤ committed, as holeRanges(committed) would return them
}

func newCursorState(c models.Cursor, g *groupState) *cursorState {
	cs := &cursorState{id: c.ID, groupID: c.GroupID, queueID: c.QueueID, version: c.Version, group: g,
		committed: c.Offset, readPos: c.Offset, holes: map[int64]int64{}, late: map[int64]int64{}, closed: map[int64]int64{}, inflight: map[int64]inflightMsg{}, done: map[int64]struct{}{}}
	for _, h := range c.Holes {
		for id := h.From; id <= h.To; id++ {
			cs.holes[id] = h.FirstSeenMS
		}
	}
	cs.ranges = len(cs.holeRanges(cs.committed))
	cs.durable = durable{version: c.Version, offset: c.Offset, holes: c.Holes}
	return cs
}

// listedAs reports whether id is listed by a commit at the committed offset as an open
// hole (hole) or as a read row not yet done (!hole).
func (c *cursorState) listedAs(id int64, hole bool) bool {
	if id > c.committed {
		return false
	}
	var ok bool
	if hole {
		_, ok = c.holes[id]
	} else {
		_, ok = c.late[id]
	}
	return ok
}

// relist keeps the range count when id (≤ committed) of one kind is added (by +1) or
// removed (by -1): its same-kind neighbours decide whether a range starts, joins,
// splits or ends; only the neighbours are looked at.
func (c *cursorState) relist(id int64, hole bool, by int) {
	left, right := c.listedAs(id-1, hole), c.listedAs(id+1, hole)
	switch {
	case left && right:
		c.ranges -= by
	case !left && !right:
		c.ranges += by
	}
}

// span is how many read offsets are not yet committed over or are listed undone,
// holes excluded (RocketMQ's consumeConcurrentlyMaxSpan, counted without pinning on
// the oldest message).
func (c *cursorState) span() int {
	above := 0
	if c.readPos > c.committed {
		for id := range c.holes {
			if id > c.committed {
				above++
			}
		}
	}
	return int(c.readPos-c.committed) - above + len(c.late)
}

// lastThrottle returns, as ranges, the offsets of ps whose next throttle is their
// limit-th in a row (a job's LastThrottle; delivery.ThrottleLimit), or nil.
func lastThrottle(ps []pendingMsg, limit int) []delivery.Range {
	var offs []int64
	for _, p := range ps {
		if p.throttles >= limit-1 {
			offs = append(offs, p.offset)
		}
	}
	if len(offs) == 0 {
		return nil
	}
	return delivery.Ranges(offs)
}

// requeue puts messages back to send in offset order (returned, or left by a job).
func (c *cursorState) requeue(ps []pendingMsg) {
	if len(ps) == 0 {
		return
	}
	slices.SortFunc(ps, func(a, b pendingMsg) int { return cmp.Compare(a.offset, b.offset) })
	if n := len(c.pending); n == 0 || c.pending[n-1].offset < ps[0].offset {
		c.pending = append(c.pending, ps...)
		return
	}
	out := make([]pendingMsg, 0, len(c.pending)+len(ps))
	i, j := 0, 0
	for i < len(c.pending) && j < len(ps) {
		if c.pending[i].offset <= ps[j].offset {
			out = append(out, c.pending[i])
			i++
		} else {
			out = append(out, ps[j])
			j++
		}
	}
	out = append(out, c.pending[i:]...)
	c.pending = append(out, ps[j:]...)
}

// markDone records offset as finished (delivered, filtered out, or a closed hole) and
// advances the commit over done offsets and open holes.
func (c *cursorState) markDone(off int64) {
	if inf, ok := c.inflight[off]; ok {
		delete(inf.job.remaining, off)
		delete(c.inflight, off)
	}
	if off <= c.committed {
		if _, ok := c.holes[off]; ok {
			delete(c.holes, off)
			c.relist(off, true, -1)
			c.dirty = true
		}
		if _, ok := c.late[off]; ok {
			delete(c.late, off)
			c.relist(off, false, -1)
			c.dirty = true
		}
		return
	}
	delete(c.holes, off)
	c.done[off] = struct{}{}
	c.dirty = true
	c.advance()
}

// holeFound moves a hole whose row appeared to the to-send set.
func (c *cursorState) holeFound(off, createdAt int64, key string) {
	seen, ok := c.holes[off]
	if !ok {
		return
	}
	delete(c.holes, off)
	if off <= c.committed {
		c.relist(off, true, -1)
		c.late[off] = seen
		c.relist(off, false, +1)
	}
	c.requeue([]pendingMsg{{offset: off, createdAt: createdAt, key: key}})
}

// advance moves the commit over done offsets, open holes and read messages not yet
// done, which it lists; a listed id starting a new range passes only while the listed
// ranges stay within MaxCommittedHoles. Each step costs O(1).
func (c *cursorState) advance() {
	for {
		next := c.committed + 1
		if next > c.readPos {
			return
		}
		if _, ok := c.done[next]; ok {
			delete(c.done, next)
			c.committed = next
			c.dirty = true
			continue
		}
		_, hole := c.holes[next]
		_, prevHole := c.holes[c.committed]
		_, prevLate := c.late[c.committed]
		extends := (hole && prevHole) || (!hole && prevLate)
		if !extends && c.ranges >= models.MaxCommittedHoles {
			return
		}
		c.committed = next
		c.dirty = true
		if !hole {
			c.late[next] = c.createdAt(next)
		}
		c.relist(next, hole, +1)
	}
}

// createdAt returns a read message's created_at (Unix ms) from the to-send set or the
// in-flight ones, or 1 if it is in neither.
func (c *cursorState) createdAt(off int64) int64 {
	if f, ok := c.inflight[off]; ok {
		return f.createdAt
	}
	if i, ok := slices.BinarySearchFunc(c.pending, off, func(p pendingMsg, o int64) int { return cmp.Compare(p.offset, o) }); ok {
		return c.pending[i].createdAt
	}
	return 1
}

// holeRanges returns the undone ids ≤ offset as ranges, as a commit lists them: open
// holes and read rows not yet done, each in ranges of their own kind, so a hole's
// first-seen time (which decides when it closes as a rollback) is never taken from a
// row that exists.
func (c *cursorState) holeRanges(offset int64) []models.Hole {
	type entry struct {
		id, at int64
		hole   bool
	}
	ids := make([]entry, 0, len(c.holes)+len(c.late))
	for id, t := range c.holes {
		if id <= offset {
			ids = append(ids, entry{id, t, true})
		}
	}
	for id, t := range c.late {
		if id <= offset {
			ids = append(ids, entry{id, t, false})
		}
	}
	slices.SortFunc(ids, func(a, b entry) int { return cmp.Compare(a.id, b.id) })
	var out []models.Hole
	prevHole := false
	for _, e := range ids {
		if n := len(out); n > 0 && out[n-1].To+1 == e.id && prevHole == e.hole {
			out[n-1].To = e.id
			out[n-1].FirstSeenMS = min(out[n-1].FirstSeenMS, e.at)
			continue
		}
		out = append(out, models.Hole{From: e.id, To: e.id, FirstSeenMS: e.at})
		prevHole = e.hole
	}
	return out
}

// commitPoint is what a commit writes: the committed offset and the undone ids at or
// below it as at most MaxCommittedHoles ranges. If more are listed (ranges split as
// messages finish out of order), the offset is cut back to just before the first
// range that does not fit.
func (c *cursorState) commitPoint() (int64, []models.Hole) {
	ranges := c.holeRanges(c.committed)
	if len(ranges) <= models.MaxCommittedHoles {
		return c.committed, ranges
	}
	return ranges[models.MaxCommittedHoles].From - 1, ranges[:models.MaxCommittedHoles]
}

// oldestUndone returns the created_at (Unix ms) of the oldest message read but not
// done, or 0.
func (c *cursorState) oldestUndone() int64 {
	oldest := int64(0)
	for _, p := range c.pending {
		if oldest == 0 || p.createdAt < oldest {
			oldest = p.createdAt
		}
	}
	for _, f := range c.inflight {
		if oldest == 0 || f.createdAt < oldest {
			oldest = f.createdAt
		}
	}
	return oldest
}

// lowestHole returns c's lowest open hole, if any.
func (c *cursorState) lowestHole() (id int64, ok bool) {
	for h := range c.holes {
		if !ok || h < id {
			id, ok = h, true
		}
	}
	return id, ok
}

// takeAt removes the messages at idx (ascending indexes into pending) from the
// to-send set and returns them in that order.
func (c *cursorState) takeAt(idx []int) []pendingMsg {
	taken := make([]pendingMsg, len(idx))
	drop := make(map[int]bool, len(idx))
	for i, k := range idx {
		taken[i], drop[k] = c.pending[k], true
	}
	keep := c.pending[:0]
	for i, p := range c.pending {
		if !drop[i] {
			keep = append(keep, p)
		}
	}
	c.pending = keep
	return taken
}
