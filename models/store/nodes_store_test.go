package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/secrets"
	"github.com/heraldhq/herald/models"
)

// TestTopicPlacementCountsNodes places new queues on read-write nodes and refuses,
// creating nothing, a placement on a node whose server does not answer.
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
	n, err := st.Nodes().NodeGet(ctx, models.PrimaryNodeID)
	require.NoError(t, err)
	require.Equal(t, 5, n.Queues)
	require.Equal(t, models.NodeReadWrite, n.State)

	// A second read-write node with fewer queues is chosen first; its server does
	// not answer, so the topic is not created.
	second := &models.Node{Name: "data-2", DSN: "root@tcp(127.0.0.1:1)/herald_nodes_elsewhere", Weight: 100, State: models.NodeReadOnly}
	require.NoError(t, st.Nodes().NodeCreate(ctx, second))
	_, err = st.DB().ExecContext(ctx, "UPDATE db_nodes SET state = 'read-write' WHERE id = ?", second.ID)
	require.NoError(t, err)
	_, err = st.TopicCreate(ctx, "payments", 1)
	require.ErrorIs(t, err, models.ErrQueueUnavailable)
	_, err = st.TopicGetByName(ctx, "payments")
	require.ErrorIs(t, err, models.ErrNotFound)
	require.ErrorIs(t, st.TopicAddQueues(ctx, topic, 6), models.ErrQueueUnavailable)

	// With no read-write node at all nothing can be placed.
	_, err = st.DB().ExecContext(ctx, "UPDATE db_nodes SET state = 'read-only'")
	require.NoError(t, err)
	_, err = st.TopicCreate(ctx, "payments", 1)
	require.ErrorIs(t, err, models.ErrNoWritableNode)
}

// TestNodeDSNSealedAndResealed stores a node DSN in plaintext without a key, reseals
// it once a key is set, and reads it back under a rotated key.
func TestNodeDSNSealedAndResealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	dsn := "herald:pw-123@tcp(127.0.0.1:3306)/herald_nodes_sealed"
	n := &models.Node{Name: "data-2", DSN: dsn, Weight: 100, State: models.NodeReadOnly}
	require.NoError(t, st.Nodes().NodeCreate(ctx, n))
	require.Equal(t, "herald:***@tcp(127.0.0.1:3306)/herald_nodes_sealed", n.DSNMasked)
	raw := func() string {
		var s string
		require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT dsn_enc FROM db_nodes WHERE id = ?", n.ID).Scan(&s))
		return s
	}
	require.Equal(t, dsn, raw(), "no key: stored as it is, like signing secrets")

	ka, err := secrets.ParseKeyring(keyA, nil)
	require.NoError(t, err)
	st.UseKeyring(ka)
	count, err := st.GroupSecretsReseal(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, count)
	require.True(t, strings.HasPrefix(raw(), secrets.SealedPrefix+ka.PrimaryID()+":"), raw())

	kb, err := secrets.ParseKeyring(keyB, []string{keyA})
	require.NoError(t, err)
	st.UseKeyring(kb)
	got, err := st.Nodes().NodeGet(ctx, n.ID)
	require.NoError(t, err)
	require.Equal(t, dsn, got.DSN, "the old key still opens")
	count, err = st.GroupSecretsReseal(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, count)
	require.True(t, strings.HasPrefix(raw(), secrets.SealedPrefix+kb.PrimaryID()+":"), raw())

	// A second node on the same database is refused, as is the control database.
	err = st.Nodes().NodeCreate(ctx, &models.Node{Name: "data-3", DSN: "other:pw@tcp(127.0.0.1:3306)/herald_nodes_sealed", Weight: 1, State: models.NodeReadOnly})
	require.ErrorIs(t, err, models.ErrConflict)
}
