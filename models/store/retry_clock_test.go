package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/testinfra"
	"github.com/heraldhq/herald/models/store"
)

// TestRetryDueOnDatabaseClock runs the retry topic against a database whose clock
// is an hour behind Herald's (every session's `timestamp` set through the DSN): due
// times must be the schedule's delay after the database's NOW(3), the clock claims
// compare with, not after Herald's clock.
func TestRetryDueOnDatabaseClock(t *testing.T) {
	t.Parallel()
	dsn, _ := testinfra.Database(t)
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

	out, err := st.RetryRecord(ctx, 1, 10, []int{100}, []store.Failure{{QueueID: 1, Offset: 7, Attempt: 1, LastStatus: 500}})
	require.NoError(t, err)
	var ahead float64
	require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT TIMESTAMPDIFF(MICROSECOND, NOW(3), due_at) / 1e6 FROM retry_messages WHERE group_id = 1").Scan(&ahead))
	require.InDelta(t, 100, ahead, 25, "due 100 s ±20 %% after the database's now, got %.0f s", ahead)
	require.InDelta(t, float64(time.Now().Add(100*time.Second).Unix()), float64(out.NextDue.Unix()), 25, "NextDue is on the caller's clock")

	require.NoError(t, st.RetryRelease(ctx, 1, 1, []int64{7}, 0))
	got, err := st.RetryClaim(ctx, 1, "tok", time.Minute, 10)
	require.NoError(t, err)
	require.Len(t, got, 1, "a released row is due at once on the database clock")
}
