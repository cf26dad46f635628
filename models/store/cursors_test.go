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
	require.NoError(t, st.Cursors().DispatcherHeartbeat(ctx, "d1", "host", time.Minute))
	require.NoError(t, st.Cursors().DispatcherHeartbeat(ctx, "d2", "host", time.Minute))
	cursors, err := st.Cursors().CursorsByGroups(ctx, []int64{g.ID})
	require.NoError(t, err)
	require.Len(t, cursors, 4)
	claimed := make([]store.CursorClaimed, len(cursors))
	for i, c := range cursors {
		var ok bool
		claimed[i], ok, err = st.Cursors().CursorClaim(ctx, c.ID, "d1")
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
	lost, err := st.Cursors().CursorsCommit(ctx, "d1", commits)
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{claimed[2].ID, claimed[3].ID}, lost)

	after, err := st.Cursors().CursorsByGroups(ctx, []int64{g.ID})
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
	lost, err = st.Cursors().CursorsCommit(ctx, "d1", commits[:2])
	require.NoError(t, err)
	require.Empty(t, lost)
}

// TestCursorClaimNamesWhoReleased: a claim names the cursor's previous holder —
// its owner when the claim takes it over from a lapsed lease, the dispatcher that
// released it (Released true) after a release, nobody for a cursor never owned —
// and clears the release, so the claim after it names the new owner instead.
func TestCursorClaimNamesWhoReleased(t *testing.T) {
	t.Parallel()
	_, st := heraldtest.Database(t)
	ctx := context.Background()
	_, err := st.TopicCreate(ctx, "orders", 2)
	require.NoError(t, err)
	g := newGroup(t, st, "billing")
	for _, d := range []string{"d1", "d2"} {
		require.NoError(t, st.Cursors().DispatcherHeartbeat(ctx, d, "host", time.Minute))
	}
	cursors, err := st.Cursors().CursorsByGroups(ctx, []int64{g.ID})
	require.NoError(t, err)
	require.Len(t, cursors, 2)
	a, b := cursors[0].ID, cursors[1].ID

	first, ok, err := st.Cursors().CursorClaim(ctx, a, "d1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, first.PrevOwner, "never owned")
	require.False(t, first.Released)

	require.NoError(t, st.Cursors().CursorsRelease(ctx, "d1", []int64{a}))
	second, ok, err := st.Cursors().CursorClaim(ctx, a, "d2")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "d1", second.PrevOwner)
	require.True(t, second.Released)
	require.Equal(t, first.Version, second.PrevVersion, "the releaser's reports carry the version it held")

	// d2's lease lapses: d1 takes the cursor over from d2, not from its own release.
	require.NoError(t, st.Cursors().DispatcherHeartbeat(ctx, "d2", "host", -time.Second))
	third, ok, err := st.Cursors().CursorClaim(ctx, a, "d1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "d2", third.PrevOwner)
	require.False(t, third.Released)

	// A release that holds the cursor for an ordered POST names its releaser too.
	_, ok, err = st.Cursors().CursorClaim(ctx, b, "d1")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, st.Cursors().CursorsReleaseHeld(ctx, "d1", []int64{b}, time.Minute))
	held, ok, err := st.Cursors().CursorClaim(ctx, b, "d1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "d1", held.PrevOwner)
	require.True(t, held.Released)
	require.Greater(t, held.HoldLeft, 50*time.Second)
}
