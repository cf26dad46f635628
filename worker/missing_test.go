package worker

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestMissingRowsCountAsDoneOnlyWhenPruned gives a job offsets its queue table does
// not hold, on a real database: those retention pruned (at or below the queue's
// pruned_through) are done; one above it (not visible yet) goes back to be sent
// later and is never reported delivered.
func TestMissingRowsCountAsDoneOnlyWhenPruned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := testdb.Database(t)
	topic, err := st.TopicCreate(ctx, "missing", 1)
	require.NoError(t, err)
	q := topic.Queues[0].ID
	testdb.Publish(t, st, topic.ID, q, 4)
	_, done, err := st.Queues().QueuePrune(ctx, q, 2, 100, 0)
	require.NoError(t, err)
	require.True(t, done)

	w := &Worker{st: st.Sides(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	job := delivery.Job{Group: 1, Queue: q, Version: 1, Owner: "elsewhere", Offsets: delivery.Ranges([]int64{1, 2, 3, 7})}
	rep := newReporter(w, job)
	msgs, err := st.Queues().MessagesGet(ctx, q, []int64{1, 2, 3, 7})
	require.NoError(t, err)
	require.Len(t, msgs, 1, "offsets 1 and 2 pruned, 7 never written")
	w.settleMissing(ctx, q, []int64{1, 2, 7}, rep)

	rep.mu.Lock()
	defer rep.mu.Unlock()
	require.Equal(t, []int64{1, 2}, rep.sent, "pruned: done")
	require.Equal(t, map[delivery.Reason][]int64{delivery.ReasonLoadFailed: {7}}, rep.back, "not visible: sent back")
}
