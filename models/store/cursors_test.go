package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestCursorsCommitFenced: one commit writes many cursors (offset and holes) in one
// statement per chunk, and names exactly those whose fence failed — a newer
// version (an offset reset) or another owner (a takeover) — without writing them.
func TestCursorsCommitFenced(t *testing.T) {
	t.Parallel()
	_, st := heraldtest.Database(t)
	ctx := context.Background()
	_, err := st.TopicCreate(ctx, "orders", 4)
	require.NoError(t, err)
	g := newGroup(t, st, "billing")
	require.NoError(t, st.DispatcherHeartbeat(ctx, "d1", "host", time.Minute))
	require.NoError(t, st.DispatcherHeartbeat(ctx, "d2", "host", time.Minute))
	cursors, err := st.CursorsByGroups(ctx, []int64{g.ID})
	require.NoError(t, err)
	require.Len(t, cursors, 4)
	claimed := make([]store.CursorClaimed, len(cursors))
	for i, c := range cursors {
		var ok bool
		claimed[i], ok, err = st.CursorClaim(ctx, c.ID, "d1")
		require.NoError(t, err)
		require.True(t, ok)
	}
	// Cursor 2 is reset (its version moves on); cursor 3 is taken by d2.
	_, err = st.DB().ExecContext(ctx, "UPDATE cursors SET version = version + 1 WHERE id = ?", claimed[2].ID)
	require.NoError(t, err)
	_, err = st.DB().ExecContext(ctx, "UPDATE cursors SET owner = 'd2' WHERE id = ?", claimed[3].ID)
	require.NoError(t, err)

	var commits []store.CursorCommit
	for i, c := range claimed {
		commits = append(commits, store.CursorCommit{ID: c.ID, Version: c.Version, Offset: int64(100 + i),
			Holes: []models.Hole{{From: int64(90 + i), To: int64(91 + i), FirstSeenMS: 5}}})
	}
	lost, err := st.CursorsCommit(ctx, "d1", commits)
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{claimed[2].ID, claimed[3].ID}, lost)

	after, err := st.CursorsByGroups(ctx, []int64{g.ID})
	require.NoError(t, err)
	byID := map[int64]models.Cursor{}
	for _, c := range after {
		byID[c.ID] = c
	}
	for i, c := range claimed {
		got := byID[c.ID]
		if i < 2 {
			require.Equal(t, int64(100+i), got.Offset, "cursor %d committed", i)
			require.Equal(t, []models.Hole{{From: int64(90 + i), To: int64(91 + i), FirstSeenMS: 5}}, got.Holes)
		} else {
			require.Zero(t, got.Offset, "cursor %d was fenced off: not written", i)
		}
	}

	// The same commit again (nothing changes for the two still owned) loses nothing.
	lost, err = st.CursorsCommit(ctx, "d1", commits[:2])
	require.NoError(t, err)
	require.Empty(t, lost)
}
