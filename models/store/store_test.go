package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models/store"
)

// TestWithTxBindsRawSQL: methods that write with raw SQL — one statement
// (DispatcherHeartbeat) or a transaction of their own (RetryRecord) — run in the
// WithTx transaction: they see each other's writes, and a rollback leaves nothing.
func TestWithTxBindsRawSQL(t *testing.T) {
	t.Parallel()
	_, st := heraldtest.Database(t)
	ctx := context.Background()
	topic, err := st.TopicCreate(ctx, "orders", 1)
	require.NoError(t, err)
	g := newGroup(t, st, "billing")
	errAbort := errors.New("abort")
	err = st.WithTx(ctx, func(tx *store.Store) error {
		require.NoError(t, tx.Cursors().DispatcherHeartbeat(ctx, "d1", "host", time.Minute))
		live, err := tx.Cursors().DispatchersLive(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"d1"}, live, "gorm reads see the raw write: one transaction")
		out, err := tx.RetryRecord(ctx, g.ID, 10, nil, []store.Failure{{QueueID: topic.Queues[0].ID, Offset: 7, Attempt: 1, LastStatus: 500}})
		require.NoError(t, err)
		require.Len(t, out.Retried, 1)
		n, err := tx.RetryCount(ctx, g.ID)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	live, err := st.Cursors().DispatchersLive(ctx)
	require.NoError(t, err)
	require.Empty(t, live, "the heartbeat rolled back with the transaction")
	var retries int
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM retry_messages").Scan(&retries))
	require.Zero(t, retries, "the retry row rolled back with the transaction")

	// The same calls outside WithTx commit on their own.
	require.NoError(t, st.Cursors().DispatcherHeartbeat(ctx, "d1", "host", time.Minute))
	live, err = st.Cursors().DispatchersLive(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"d1"}, live)
}
