package dispatcher

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

func newTestCursor(offset int64, holes ...models.Hole) *cursorState {
	return newCursorState(models.Cursor{ID: 1, GroupID: 1, QueueID: 1, Offset: offset, Holes: holes, Version: 1}, &groupState{})
}

// TestCursorAdvance checks the commit moves only over done offsets and open holes,
// and that a commit lists every undone offset at or below it.
func TestCursorAdvance(t *testing.T) {
	t.Parallel()
	c := newTestCursor(10)
	c.readPos = 15
	c.holes[12] = 1000 // an insert not yet committed
	c.markDone(13)
	require.Equal(t, int64(10), c.committed, "11 is not done")
	c.markDone(11)
	require.Equal(t, int64(13), c.committed, "over 11, the open hole 12, and 13")
	require.Equal(t, []models.Hole{{From: 12, To: 12, FirstSeenMS: 1000}}, c.holeRanges(c.committed))
	require.Equal(t, 2, c.span(), "15-13; the hole at 12 is below the commit")

	// The late row appears: it is pending, still listed in commits until done.
	c.holeFound(12, 5)
	require.Empty(t, c.holes)
	require.Equal(t, []models.Hole{{From: 12, To: 12, FirstSeenMS: 1000}}, c.holeRanges(c.committed))
	c.markDone(12)
	require.Empty(t, c.holeRanges(c.committed))
	c.markDone(12)
	require.Equal(t, int64(13), c.committed, "done is idempotent")
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
