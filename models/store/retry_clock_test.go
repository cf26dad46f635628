package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models/store"
)

// TestRetryDueOnDatabaseClock runs the retry topic against a database whose clock
// is an hour behind Herald's (every session's `timestamp` set through the DSN): due
// times must be the schedule's delay after the database's NOW(3), the clock claims
// compare with, not after Herald's clock.
func TestRetryDueOnDatabaseClock(t *testing.T) {
	t.Parallel()
	dsn, _ := heraldtest.Database(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	skewed := fmt.Sprintf("%s%stimestamp=%d", dsn, sep, time.Now().Add(-time.Hour).Unix())
	ctx := context.Background()
	st, err := store.Open(ctx, skewed)
	require.NoError(t, err)
	defer st.Close()
	dbNow, err := st.Now(ctx)
	require.NoError(t, err)
	require.Less(t, dbNow, time.Now().Add(-50*time.Minute), "the session clock is skewed")
	_, err = st.TopicCreate(ctx, "orders", 1)
	require.NoError(t, err)
	g := newGroup(t, st, "billing") // retry rows belong to a group that exists

	out, err := st.RetryRecord(ctx, g.ID, 10, []int{100}, []store.Failure{{QueueID: 1, Offset: 7, Attempt: 1, LastStatus: 500}})
	require.NoError(t, err)
	var ahead float64
	require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT TIMESTAMPDIFF(MICROSECOND, NOW(3), due_at) / 1e6 FROM retry_messages WHERE group_id = ?", g.ID).Scan(&ahead))
	require.InDelta(t, 100, ahead, 25, "due 100 s ±20 %% after the database's now, got %.0f s", ahead)
	require.InDelta(t, float64(time.Now().Add(100*time.Second).Unix()), float64(out.NextDue.Unix()), 25, "NextDue is on the caller's clock")

	require.NoError(t, st.RetryRelease(ctx, g.ID, 1, []int64{7}, 0))
	got, err := st.RetryClaim(ctx, g.ID, "tok", time.Minute, 10)
	require.NoError(t, err)
	require.Len(t, got, 1, "a released row is due at once on the database clock")
}

// TestClockRebaseAfterBackwardStep steps the database clock of a Store's sessions an
// hour back (heraldtest.ClockProxy): the next heartbeat reports the step and re-bases
// what was written on the old clock, so a retry due in 5 s and a peer's 3 s lease
// are again at most that far ahead of NOW(3), not an hour; the heartbeat after that
// sees a clock that behaves.
func TestClockRebaseAfterBackwardStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, _ := heraldtest.Database(t)
	cp := heraldtest.NewClockProxy(t, dsn)
	st, err := store.Open(ctx, cp.ProxiedDSN(t, dsn))
	require.NoError(t, err)
	defer st.Close()
	stepped, err := st.Cursors().DispatcherRenew(ctx, "a", "h", 3*time.Second)
	require.NoError(t, err)
	require.False(t, stepped, "a first heartbeat on a clock that behaves re-bases nothing")
	require.NoError(t, st.Cursors().DispatcherHeartbeat(ctx, "b", "h", 3*time.Second))
	_, err = st.TopicCreate(ctx, "orders", 1)
	require.NoError(t, err)
	g := newGroup(t, st, "billing") // retry rows belong to a group that exists
	_, err = st.RetryRecord(ctx, g.ID, 10, []int{5}, []store.Failure{{QueueID: 1, Offset: 7, Attempt: 1, LastStatus: 500}})
	require.NoError(t, err)
	ahead := func(q string) float64 {
		var s float64
		require.NoError(t, st.DB().QueryRowContext(ctx, q).Scan(&s))
		return s
	}
	const dueAhead = "SELECT TIMESTAMPDIFF(MICROSECOND, NOW(3), due_at) / 1e6 FROM retry_messages"
	const leaseAhead = "SELECT TIMESTAMPDIFF(MICROSECOND, NOW(3), lease_until) / 1e6 FROM dispatchers WHERE id = 'b'"

	cp.Step(-time.Hour)
	require.Greater(t, ahead(dueAhead), 3500.0, "the old due time is an hour ahead of the stepped clock")
	stepped, err = st.Cursors().DispatcherRenew(ctx, "a", "h", 3*time.Second)
	require.NoError(t, err)
	require.True(t, stepped)
	require.InDelta(t, 5, ahead(dueAhead), 1.5, "the retry waits its delay (5 s ±20 %%) from the step")
	require.InDelta(t, 3, ahead(leaseAhead), 0.5, "the peer's lease ends one lease length after the step")
	stepped, err = st.Cursors().DispatcherRenew(ctx, "a", "h", 3*time.Second)
	require.NoError(t, err)
	require.False(t, stepped)
}
