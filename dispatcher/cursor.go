package dispatcher

import (
	"slices"

	"github.com/heraldhq/herald/models"
)

// pendingMsg is a message read and due to be sent: first attempts in offset order,
// returned messages behind with their back-off.
type pendingMsg struct {
	offset    int64
	createdAt int64 // Unix ms, for lag seconds
	notBefore int64 // Unix ms; 0 = now
	returns   int   // times returned after a failed POST, for back-off
}

type inflightMsg struct {
	job       *jobState
	createdAt int64
	returns   int
}

// cursorState is the owner's in-memory view of one cursor (DESIGN §3 gap rule, §4).
// Every offset ≤ committed is done except the ids in holes that are ≤ committed.
type cursorState struct {
	id, groupID, queueID int64
	version              int64
	group                *groupState

	committed int64
	readPos   int64
	holes     map[int64]int64 // open hole id → first seen, Unix ms
	late      map[int64]int64 // rows found in holes ≤ committed, not yet done → first seen
	closed    map[int64]int64 // holes closed as rollbacks → when to check them once more (Unix ms)
	beyond    bool            // committed past the table's MAX(id): not served (restore or lagging replica)
	pending   []pendingMsg
	inflight  map[int64]inflightMsg
	done      map[int64]struct{} // done offsets above committed
	jobs      int
	dirty     bool      // changed since the last commit
	takeover  *takeover // claimed from another owner, not served until its reports are applied
}

func newCursorState(c models.Cursor, g *groupState) *cursorState {
	cs := &cursorState{id: c.ID, groupID: c.GroupID, queueID: c.QueueID, version: c.Version, group: g,
		committed: c.Offset, readPos: c.Offset, holes: map[int64]int64{}, late: map[int64]int64{}, closed: map[int64]int64{}, inflight: map[int64]inflightMsg{}, done: map[int64]struct{}{}}
	for _, h := range c.Holes {
		for id := h.From; id <= h.To; id++ {
			cs.holes[id] = h.FirstSeenMS
		}
	}
	return cs
}

// span is how many offsets lie between the commit and the read position, holes excluded
// (RocketMQ's consumeConcurrentlyMaxSpan).
func (c *cursorState) span() int {
	above := 0
	for id := range c.holes {
		if id > c.committed {
			above++
		}
	}
	return int(c.readPos-c.committed) - above
}

// markDone records offset as finished (delivered, filtered out, or a closed hole) and
// advances the commit over done offsets and open holes.
func (c *cursorState) markDone(off int64) {
	if inf, ok := c.inflight[off]; ok {
		delete(inf.job.remaining, off)
		delete(c.inflight, off)
	}
	if off <= c.committed {
		_, isHole := c.holes[off]
		_, isLate := c.late[off]
		if isHole || isLate {
			delete(c.holes, off)
			delete(c.late, off)
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
func (c *cursorState) holeFound(off, createdAt int64) {
	seen, ok := c.holes[off]
	if !ok {
		return
	}
	delete(c.holes, off)
	if off <= c.committed {
		c.late[off] = seen
	}
	c.pending = append(c.pending, pendingMsg{offset: off, createdAt: createdAt})
}

func (c *cursorState) advance() {
	for {
		next := c.committed + 1
		if _, ok := c.done[next]; ok {
			delete(c.done, next)
			c.committed = next
			c.dirty = true
			continue
		}
		if _, ok := c.holes[next]; ok && next <= c.readPos && c.holeRangesBelow(next) < models.MaxCommittedHoles {
			c.committed = next
			c.dirty = true
			continue
		}
		return
	}
}

// holeRangesBelow counts the hole ranges a commit at offset would list.
func (c *cursorState) holeRangesBelow(offset int64) int {
	return len(c.holeRanges(offset))
}

// holeRanges returns open holes ≤ offset as ranges, as a commit lists them.
func (c *cursorState) holeRanges(offset int64) []models.Hole {
	ids := make([]int64, 0, len(c.holes)+len(c.late))
	seen := make(map[int64]int64, len(c.holes)+len(c.late))
	for _, m := range []map[int64]int64{c.holes, c.late} {
		for id, t := range m {
			if id <= offset {
				ids = append(ids, id)
				seen[id] = t
			}
		}
	}
	slices.Sort(ids)
	var out []models.Hole
	for _, id := range ids {
		if n := len(out); n > 0 && out[n-1].To+1 == id {
			out[n-1].To = id
			out[n-1].FirstSeenMS = min(out[n-1].FirstSeenMS, seen[id])
			continue
		}
		out = append(out, models.Hole{From: id, To: id, FirstSeenMS: seen[id]})
	}
	return out
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
