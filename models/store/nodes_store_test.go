package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
)

// TestTopicPlacementCountsNodes places new queues on read-write nodes and refuses,
// creating nothing, a placement on a node whose queue tables Herald cannot reach yet.
func TestTopicPlacementCountsNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	topic, err := st.TopicCreate(ctx, "orders", 3)
	require.NoError(t, err)
	for _, q := range topic.Queues {
		require.Equal(t, models.PrimaryNodeID, q.NodeID)
	}
	require.NoError(t, st.TopicAddQueues(ctx, topic, 5))
	n, err := st.NodeGet(ctx, models.PrimaryNodeID)
	require.NoError(t, err)
	require.Equal(t, 5, n.Queues)
	require.Equal(t, models.NodeReadWrite, n.State)

	// A second read-write node (the control layer refuses this state for now) with
	// fewer queues would be chosen first: the store refuses rather than create its
	// tables on the control database.
	second := &models.Node{Name: "data-2", DSN: "root@tcp(127.0.0.1:3306)/herald_nodes_elsewhere", Weight: 100, State: models.NodeReadOnly}
	require.NoError(t, st.NodeCreate(ctx, second))
	_, err = st.DB().ExecContext(ctx, "UPDATE db_nodes SET state = 'read-write' WHERE id = ?", second.ID)
	require.NoError(t, err)
	_, err = st.TopicCreate(ctx, "payments", 1)
	require.ErrorContains(t, err, "not built yet")
	_, err = st.TopicGetByName(ctx, "payments")
	require.ErrorIs(t, err, models.ErrNotFound)
	require.ErrorContains(t, st.TopicAddQueues(ctx, topic, 6), "not built yet")

	// With no read-write node at all nothing can be placed.
	_, err = st.DB().ExecContext(ctx, "UPDATE db_nodes SET state = 'read-only'")
	require.NoError(t, err)
	_, err = st.TopicCreate(ctx, "payments", 1)
	require.ErrorIs(t, err, models.ErrNoWritableNode)
}
