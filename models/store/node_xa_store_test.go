package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestCrossNodeRequestIsAtomic stores a keyed request whose keys live on two db
// nodes whole (XA), then makes node 2's branch fail (its queue table dropped behind
// Herald's back) and checks that nothing of the request was stored on node 1 either.
// A request on node 2 alone with an Idempotency-Key stores its key row on the control
// database with the messages.
func TestCrossNodeRequestIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	dsn2 := heraldtest.StartMariaDB(t, "herald_xa")
	second := &models.Node{Name: "data-2", DSN: dsn2, Weight: 100, State: models.NodeReadWrite}
	require.NoError(t, st.Nodes().NodeCreate(ctx, second))
	topic, err := st.TopicCreate(ctx, "orders", 2)
	require.NoError(t, err)
	require.Equal(t, models.PrimaryNodeID, topic.Queues[0].NodeID)
	require.Equal(t, second.ID, topic.Queues[1].NodeID)
	db2, err := sql.Open("mysql", dsn2)
	require.NoError(t, err)
	defer db2.Close()

	keyOn := map[int64]string{}
	for i := 0; len(keyOn) < 2; i++ {
		k := fmt.Sprintf("k%d", i)
		q, _ := topic.QueueForKey(k)
		if _, ok := keyOn[q.ID]; !ok {
			keyOn[q.ID] = k
		}
	}
	q1, q2 := topic.Queues[0].ID, topic.Queues[1].ID
	req := func(bodies ...string) *store.PublishRequest {
		r := &store.PublishRequest{TopicID: topic.ID}
		for i, b := range bodies {
			q := []int64{q1, q2}[i%2]
			r.Messages = append(r.Messages, models.Message{QueueID: q, Key: keyOn[q], Body: []byte(b), ContentType: "text/plain", CreatedAt: 1})
		}
		return r
	}
	count := func(db *sql.DB, q int64) int {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+models.QueueTableName(q)).Scan(&n))
		return n
	}

	ok := req("a", "b")
	require.NoError(t, st.Queues().MessagesInsert(ctx, []*store.PublishRequest{ok}))
	require.Equal(t, 1, count(st.DB(), q1))
	require.Equal(t, 1, count(db2, q2))
	got, err := st.Queues().MessagesGet(ctx, q2, []int64{ok.Messages[1].Offset})
	require.NoError(t, err)
	require.Equal(t, "b", string(got[0].Body))
	var decisions int
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM xa_decisions").Scan(&decisions))
	require.Zero(t, decisions, "a decision row is deleted once every branch committed")

	// Latency, logged (noisy on a shared machine): a two-message request on both nodes
	// (XA) vs the same two messages in node 1's queue (one two-row INSERT, autocommit).
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	var xa, plain []time.Duration
	for range 20 {
		t0 := time.Now()
		require.NoError(t, st.Queues().MessagesInsert(ctx, []*store.PublishRequest{req("a", "b")}))
		xa = append(xa, time.Since(t0))
		one := &store.PublishRequest{TopicID: topic.ID, Messages: []models.Message{
			{QueueID: q1, Key: keyOn[q1], Body: []byte("a"), ContentType: "text/plain", CreatedAt: 1},
			{QueueID: q1, Key: keyOn[q1], Body: []byte("b"), ContentType: "text/plain", CreatedAt: 1}}}
		t0 = time.Now()
		require.NoError(t, st.Queues().MessagesInsert(ctx, []*store.PublishRequest{one}))
		plain = append(plain, time.Since(t0))
	}
	t.Logf("median of 20: cross-node XA request %v, one-node request %v", median(xa), median(plain))
	base1 := count(st.DB(), q1)

	// Node 2 alone with an Idempotency-Key: the key row is a branch on the control database.
	idem := &store.PublishRequest{TopicID: topic.ID, Messages: []models.Message{{QueueID: q2, Key: keyOn[q2], Body: []byte("c"), ContentType: "text/plain", CreatedAt: 1}},
		Idempotency: &store.IdempotencyRecord{APIKeyID: 1, TopicID: topic.ID, Key: "idem-1", RequestHash: []byte("h")},
		Respond:     func([]models.Message) (int, []byte) { return 201, []byte("{}") }}
	require.NoError(t, st.Queues().MessagesInsert(ctx, []*store.PublishRequest{idem}))
	require.Equal(t, 22, count(db2, q2))
	rec, err := st.IdempotencyGet(ctx, 1, topic.ID, "idem-1")
	require.NoError(t, err)
	require.Equal(t, 201, rec.Status)

	// Node 2's branch fails: nothing is stored on node 1.
	_, err = db2.Exec("DROP TABLE " + models.QueueTableName(q2))
	require.NoError(t, err)
	require.Error(t, st.Queues().MessagesInsert(ctx, []*store.PublishRequest{req("x", "y")}))
	require.Equal(t, base1, count(st.DB(), q1), "no half request")
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM xa_decisions").Scan(&decisions))
	require.Zero(t, decisions, "no commit decision for a rolled-back request")
}
