package dispatcher

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/bus"
)

// TestGhostsHoldCursorAndCredits: a cursor taken over while its previous owner's
// jobs still run stays held until they end, and their POSTs hold the group's
// credits meanwhile (the group's other cursors share what is left), so
// max_in_flight holds across the takeover; a cursor taken from this dispatcher's
// own id waits for nothing, and a dropped cursor gives its ghosts' credits back.
func TestGhostsHoldCursorAndCredits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupCut(t, 16, 1)
	gs := b.group(4, 1, 20, 20)
	taken, other := gs.cursors[0], gs.cursors[1]
	for _, cs := range gs.cursors {
		b.d.byGQ[[2]int64{gs.g.ID, cs.queueID}] = cs
	}
	b.q.open = []bus.OpenJob{{Key: "a", POSTs: 1}, {Key: "b", POSTs: 2}}

	b.d.takeovers.hold(taken, b.d.id, 1, 0)
	require.False(t, b.d.takeovers.waitGhosts(ctx, taken), "its own jobs are counted already")
	require.Zero(t, gs.inflightP)

	b.d.takeovers.hold(taken, "d0", 1, 0)
	require.True(t, b.d.takeovers.waitGhosts(ctx, taken))
	require.Equal(t, 3, gs.inflightP)
	b.d.cut(ctx)
	require.Len(t, b.q.jobs, 1, "three of the four credits are the previous owner's")
	require.Equal(t, other.queueID, b.q.jobs[0].Queue, "the held cursor sends nothing")

	b.q.ended = map[string]bool{"b": true}
	require.True(t, b.d.takeovers.waitGhosts(ctx, taken), "one job still runs")
	require.Equal(t, 2, gs.inflightP, "the ended job's two credits are back")
	b.q.ended["a"] = true
	require.False(t, b.d.takeovers.waitGhosts(ctx, taken), "every job ended: the reports can be replayed")
	require.Equal(t, 1, gs.inflightP)

	b.q.ended = nil
	b.d.takeovers.hold(other, "d0", 1, 0)
	require.True(t, b.d.takeovers.waitGhosts(ctx, other))
	require.Equal(t, 4, gs.inflightP)
	b.d.takeovers.forget(other)
	require.Equal(t, 1, gs.inflightP, "a dropped cursor gives its ghosts' credits back")
}
