package dispatcher

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

func newTestCursor(offset int64, holes ...models.Hole) *cursorState {
	return newCursorState(models.Cursor{ID: 1, GroupID: 1, QueueID: 1, Offset: offset, Holes: holes, Version: 1}, &groupState{})
}

// TestCursorAdvance checks the commit moves over done offsets, open holes and read
// messages not yet done, and that a commit lists every undone offset at or below it,
// holes and rows in ranges of their own kind.
func TestCursorAdvance(t *testing.T) {
	t.Parallel()
	c := newTestCursor(10)
	c.readPos = 15
	c.pending = []pendingMsg{{offset: 11, createdAt: 500}, {offset: 14, createdAt: 600}, {offset: 15, createdAt: 700}}
	c.holes[12] = 1000 // an insert not yet committed
	c.markDone(13)
	require.Equal(t, int64(15), c.committed, "over 11 (pending), the hole 12, 13 and 14-15 (pending)")
	require.Equal(t, []models.Hole{{From: 11, To: 11, FirstSeenMS: 500}, {From: 12, To: 12, FirstSeenMS: 1000}, {From: 14, To: 15, FirstSeenMS: 600}}, c.holeRanges(c.committed))
	require.Equal(t, 3, c.span(), "11, 14 and 15 are read and undone; the hole does not count")
	c.markDone(11)
	c.markDone(14)
	c.markDone(15)
	require.Equal(t, []models.Hole{{From: 12, To: 12, FirstSeenMS: 1000}}, c.holeRanges(c.committed))
	require.Zero(t, c.span())

	// The late row appears: it is pending, still listed in commits until done.
	c.holeFound(12, 5, "")
	require.Empty(t, c.holes)
	require.Equal(t, []models.Hole{{From: 12, To: 12, FirstSeenMS: 1000}}, c.holeRanges(c.committed))
	c.markDone(12)
	require.Empty(t, c.holeRanges(c.committed))
	c.markDone(12)
	require.Equal(t, int64(15), c.committed, "done is idempotent")
}

// TestCursorCommitsAroundUndone checks a message held back (throttled, in flight)
// never freezes the commit, that a commit never lists more than MaxCommittedHoles
// ranges, and that cutting the offset back keeps every listed id undone.
func TestCursorCommitsAroundUndone(t *testing.T) {
	t.Parallel()
	c := newTestCursor(0)
	c.readPos = 1000
	for off := int64(1); off <= 1000; off++ {
		c.pending = append(c.pending, pendingMsg{offset: off, createdAt: off})
	}
	c.advance()
	off, holes := c.commitPoint()
	require.Equal(t, int64(1000), off)
	require.Equal(t, []models.Hole{{From: 1, To: 1000, FirstSeenMS: 1}}, holes)
	// Every even offset is delivered: 500 single ranges, more than a commit may list.
	for o := int64(2); o <= 1000; o += 2 {
		c.markDone(o)
	}
	off, holes = c.commitPoint()
	require.Len(t, holes, models.MaxCommittedHoles)
	require.Equal(t, int64(2*models.MaxCommittedHoles), off, "cut back before the first range that does not fit")
	for _, h := range holes {
		require.LessOrEqual(t, h.To, off)
		require.Equal(t, h.From, h.To)
		require.Equal(t, int64(1), h.From%2, "only undone (odd) offsets listed")
	}
}

// TestCursorRequeueKeepsOffsetOrder checks returned messages go back to their place,
// not behind newer ones.
func TestCursorRequeueKeepsOffsetOrder(t *testing.T) {
	t.Parallel()
	c := newTestCursor(0)
	c.pending = []pendingMsg{{offset: 5}, {offset: 8}, {offset: 9}}
	c.requeue([]pendingMsg{{offset: 7}, {offset: 2}})
	c.requeue([]pendingMsg{{offset: 12}})
	var got []int64
	for _, p := range c.pending {
		got = append(got, p.offset)
	}
	require.Equal(t, []int64{2, 5, 7, 8, 9, 12}, got)
}

func TestCursorRestoresCommittedHoles(t *testing.T) {
	t.Parallel()
	c := newTestCursor(20, models.Hole{From: 5, To: 7, FirstSeenMS: 42})
	require.Len(t, c.holes, 3)
	require.Equal(t, []models.Hole{{From: 5, To: 7, FirstSeenMS: 42}}, c.holeRanges(c.committed))
	c.markDone(6) // closed as a rollback
	require.Equal(t, []models.Hole{{From: 5, To: 5, FirstSeenMS: 42}, {From: 7, To: 7, FirstSeenMS: 42}}, c.holeRanges(c.committed))
}

func TestOwnerIsSticky(t *testing.T) {
	t.Parallel()
	live := []string{"a", "b", "c"}
	moved := 0
	for g := int64(1); g <= 300; g++ {
		before := owner(g, live)
		require.Contains(t, live, before)
		if owner(g, append(live, "d")) != before {
			moved++
		}
	}
	require.InDelta(t, 75, moved, 35, "a join moves about 1/N of groups")
}

// TestCursorRangeCount checks the kept count of listed ranges matches the ranges a
// commit would list through reads, holes found and closed, and out-of-order done.
func TestCursorRangeCount(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	c := newTestCursor(0, models.Hole{From: 3, To: 4, FirstSeenMS: 1})
	c.committed = 5
	c.readPos = 5
	c.ranges = len(c.holeRanges(c.committed))
	for step := range 3000 {
		switch rng.IntN(4) {
		case 0: // read a few rows, some ids missing
			for range rng.IntN(8) {
				c.readPos++
				if rng.IntN(5) == 0 {
					c.holes[c.readPos] = int64(step)
				} else {
					c.pending = append(c.pending, pendingMsg{offset: c.readPos, createdAt: int64(step)})
				}
			}
			c.advance()
		case 1: // a hole's row appears
			for id := range c.holes {
				c.holeFound(id, int64(step), "")
				break
			}
		default: // something finishes: a pending row, or a hole closes
			if len(c.pending) > 0 {
				i := rng.IntN(len(c.pending))
				off := c.pending[i].offset
				c.pending = slices.Delete(c.pending, i, i+1)
				c.markDone(off)
			} else {
				for id := range c.holes {
					c.markDone(id)
					break
				}
			}
		}
		require.Equal(t, len(c.holeRanges(c.committed)), c.ranges, "step %d", step)
	}
}
