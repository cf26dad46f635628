package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models/store"
)

// TestDispatcherLeases: live dispatchers come with the time their lease has left, in
// database time, ordered by id; a lapsed one is absent.
func TestDispatcherLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	require.NoError(t, st.Cursors().DispatcherHeartbeat(ctx, "b", "h", 3*time.Second))
	require.NoError(t, st.Cursors().DispatcherHeartbeat(ctx, "a", "h", 300*time.Millisecond))
	ls, err := st.Cursors().DispatcherLeases(ctx)
	require.NoError(t, err)
	require.Len(t, ls, 2)
	require.Equal(t, "a", ls[0].ID)
	require.LessOrEqual(t, ls[0].Left, 300*time.Millisecond)
	require.Equal(t, "b", ls[1].ID)
	require.Greater(t, ls[1].Left, 2*time.Second)
	require.LessOrEqual(t, ls[1].Left, 3*time.Second)
	time.Sleep(ls[0].Left + 50*time.Millisecond) // latency: lets the short lease run out on the database clock
	ls, err = st.Cursors().DispatcherLeases(ctx)
	require.NoError(t, err)
	require.Equal(t, []store.DispatcherLease{{ID: "b", Left: ls[0].Left}}, ls, "a's lease ran out")
}

// TestRetryNextDueByGroups: one statement gives each group's earliest due retry
// row; a group without rows is absent.
func TestRetryNextDueByGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	_, err := st.DB().ExecContext(ctx, `INSERT INTO retry_messages (group_id, queue_id, msg_offset, attempt, due_at) VALUES
		(1, 1, 1, 1, '2030-01-01 00:00:05'), (1, 2, 7, 2, '2030-01-01 00:00:01'), (2, 1, 1, 1, '2030-01-02 00:00:00')`)
	require.NoError(t, err)
	due, err := st.RetryNextDueByGroups(ctx, []int64{1, 2, 3})
	require.NoError(t, err)
	require.Len(t, due, 2)
	// On the caller's clock: the database's waits added to one time.Now().
	require.Equal(t, 24*time.Hour-time.Second, due[2].Sub(due[1]))
	require.InDelta(t, time.Until(time.Date(2030, 1, 1, 0, 0, 1, 0, time.UTC)).Seconds(), time.Until(due[1]).Seconds(), 5)
}

// TestGroupWritesBatched: health rows and delivery counts of many groups are written
// by one call each, and add up like their one-group forms.
func TestGroupWritesBatched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	var hs []store.GroupHealth
	for g := int64(1); g <= 250; g++ { // more than one statement's rows
		hs = append(hs, store.GroupHealth{GroupID: g, BreakerState: "open", ConsecutiveFailures: int(g), LastError: "timeout"})
	}
	require.NoError(t, st.GroupHealthSave(ctx, hs...))
	hs[6].BreakerState = "closed"
	require.NoError(t, st.GroupHealthSave(ctx, hs[6]))
	for _, g := range []int64{1, 7, 250} {
		h, err := st.GroupHealthGet(ctx, g)
		require.NoError(t, err)
		require.Equal(t, int(g), h.ConsecutiveFailures)
		require.Equal(t, map[int64]string{1: "open", 7: "closed", 250: "open"}[g], h.BreakerState)
	}

	m := time.Now().UTC().Truncate(time.Minute)
	require.NoError(t, st.StatsAddDeliveries(ctx, m, []store.StatsDelta{{GroupID: 1, Delivered: 3}, {GroupID: 2, Failed: 2}}))
	require.NoError(t, st.StatsAddDeliveries(ctx, m.Add(10*time.Second), []store.StatsDelta{{GroupID: 1, Delivered: 4, Failed: 1}}))
	tot, err := st.StatsTotalsSince(ctx, m.Add(-time.Minute))
	require.NoError(t, err)
	require.Equal(t, int64(7), tot.GroupDelivered[1])
	require.Equal(t, int64(0), tot.GroupDelivered[2])
	series, err := st.StatsSeries(ctx, store.StatsScope{GroupID: 1}, m, m.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, store.StatsPoint{Minute: m, Delivered: 7, Failed: 1}, series[0])
}
