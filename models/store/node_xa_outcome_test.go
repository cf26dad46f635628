package store_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// xaPair is a control database reached through a CutProxy, with a second db node
// (a private MariaDB) and a topic of two queues, one on each node.
type xaPair struct {
	st     *store.Store
	cut    *heraldtest.CutProxy
	db1    *sql.DB // the control database (node 1), not through the proxy
	db2    *sql.DB // node 2
	topic  *models.Topic
	q1, q2 int64
	keyOn  map[int64]string
}

func newXAPair(t *testing.T) *xaPair {
	t.Helper()
	ctx := context.Background()
	dsn, direct := heraldtest.Database(t)
	cut := heraldtest.NewCutProxy(t, dsn)
	st, err := store.Open(ctx, cut.ProxiedDSN(t, dsn))
	require.NoError(t, err)
	st.SetPoolSize(8)
	t.Cleanup(func() { st.Close() })
	dsn2 := heraldtest.StartMariaDB(t, "herald_xa_cut")
	second := &models.Node{Name: "data-2", DSN: dsn2, Weight: 100, State: models.NodeReadWrite}
	require.NoError(t, st.Nodes().NodeCreate(ctx, second))
	topic, err := st.TopicCreate(ctx, "orders", 2)
	require.NoError(t, err)
	require.Equal(t, second.ID, topic.Queues[1].NodeID)
	db2, err := sql.Open("mysql", dsn2)
	require.NoError(t, err)
	t.Cleanup(func() { db2.Close() })
	p := &xaPair{st: st, cut: cut, db1: direct.DB(), db2: db2, topic: topic, q1: topic.Queues[0].ID, q2: topic.Queues[1].ID, keyOn: map[int64]string{}}
	for i := 0; len(p.keyOn) < 2; i++ {
		k := fmt.Sprintf("k%d", i)
		q, _ := topic.QueueForKey(k)
		if _, ok := p.keyOn[q.ID]; !ok {
			p.keyOn[q.ID] = k
		}
	}
	return p
}

// request is one message on each node, with an Idempotency-Key.
func (p *xaPair) request(idemKey string) *store.PublishRequest {
	r := &store.PublishRequest{TopicID: p.topic.ID,
		Idempotency: &store.IdempotencyRecord{APIKeyID: 1, TopicID: p.topic.ID, Key: idemKey, RequestHash: []byte("h")},
		Respond:     func([]models.Message) (int, []byte) { return 201, []byte("{}") }}
	for _, q := range []int64{p.q1, p.q2} {
		r.Messages = append(r.Messages, models.Message{QueueID: q, Key: p.keyOn[q], Body: []byte("m"), ContentType: "text/plain", CreatedAt: 1})
	}
	return r
}

// stored counts the rows of q1 (node 1) and q2 (node 2).
func (p *xaPair) stored(t *testing.T) (int, int) {
	t.Helper()
	var a, b int
	require.NoError(t, p.db1.QueryRow("SELECT COUNT(*) FROM "+models.QueueTableName(p.q1)).Scan(&a))
	require.NoError(t, p.db2.QueryRow("SELECT COUNT(*) FROM "+models.QueueTableName(p.q2)).Scan(&b))
	return a, b
}

// TestXADecisionAnswerLost loses the answer to the decision row's INSERT (it
// committed) together with node 1, the control database: the request must answer
// "outcome unknown", roll back no branch, and recovery must then store it whole,
// on both nodes, with its idempotency record.
func TestXADecisionAnswerLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newXAPair(t)
	p.cut.Arm("INSERT INTO xa_decisions")
	err := p.st.Queues().MessagesInsert(ctx, []*store.PublishRequest{p.request("idem-lost")})
	require.ErrorIs(t, err, models.ErrOutcomeUnknown)
	<-p.cut.Cut()
	var decided int
	require.NoError(t, p.db1.QueryRow("SELECT COUNT(*) FROM xa_decisions").Scan(&decided))
	require.Equal(t, 1, decided, "the decision row committed; only its answer was lost")
	p.cut.Restore()

	require.Eventually(t, func() bool {
		_, _ = p.st.Queues().XARecover(ctx)
		a, b := p.stored(t)
		return a == 1 && b == 1
	}, 20*time.Second, 100*time.Millisecond, "recovery did not store the decided request on both nodes")
	rec, err := p.st.IdempotencyGet(ctx, 1, p.topic.ID, "idem-lost")
	require.NoError(t, err)
	require.Equal(t, 201, rec.Status)
}

// TestXACommitUnconfirmed loses node 1's answer to XA COMMIT and keeps node 1 away
// past the request's deadline: the request must answer "outcome unknown", not
// stored, and its decision row must stay for recovery. When node 1 comes back
// before the deadline, the commit is confirmed from a new connection (the branch
// is gone: XAER_NOTA means it committed) and the request answers stored.
func TestXACommitUnconfirmed(t *testing.T) {
	t.Parallel()
	p := newXAPair(t)

	p.cut.Arm("XA COMMIT")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err := p.st.Queues().MessagesInsert(ctx, []*store.PublishRequest{p.request("idem-away")})
	cancel()
	require.ErrorIs(t, err, models.ErrOutcomeUnknown)
	var decided int
	require.NoError(t, p.db1.QueryRow("SELECT COUNT(*) FROM xa_decisions").Scan(&decided))
	require.Equal(t, 1, decided, "an unconfirmed commit keeps its decision row")
	p.cut.Restore()
	require.Eventually(t, func() bool {
		_, _ = p.st.Queues().XARecover(context.Background())
		a, b := p.stored(t)
		return a == 1 && b == 1
	}, 20*time.Second, 100*time.Millisecond, "recovery did not finish the decided request")

	p.cut.Arm("XA COMMIT")
	go func() {
		<-p.cut.Cut()
		time.Sleep(300 * time.Millisecond)
		p.cut.Restore()
	}()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.st.Queues().MessagesInsert(ctx, []*store.PublishRequest{p.request("idem-back")}))
	a, b := p.stored(t)
	require.Equal(t, 2, a)
	require.Equal(t, 2, b)
}

// TestSealWaitsForPreparedBranches prepares a Herald XA branch that inserted into a
// queue and drops its session (MariaDB then keeps it without a metadata lock), and
// seals the queue: the seal must wait until the branch is committed and take its
// row into the watermark.
func TestSealWaitsForPreparedBranches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	topic, err := st.TopicCreate(ctx, "sealed", 1)
	require.NoError(t, err)
	q := topic.Queues[0].ID
	r := &store.PublishRequest{TopicID: topic.ID, Messages: []models.Message{{QueueID: q, Body: []byte("m"), ContentType: "text/plain", CreatedAt: 1}}}
	require.NoError(t, st.Queues().MessagesInsert(ctx, []*store.PublishRequest{r}))

	xid := fmt.Sprintf("herald-%d-00000000000000aa", time.Now().UnixMilli())
	t.Cleanup(func() { _, _ = st.DB().Exec("XA ROLLBACK '" + xid + "'") }) // never left on the shared server
	c, err := st.DB().Conn(ctx)
	require.NoError(t, err)
	for _, stmt := range []string{"XA START '" + xid + "'",
		"INSERT INTO " + models.QueueTableName(q) + " (body, content_type, created_at) VALUES ('x', 'text/plain', 1)",
		"XA END '" + xid + "'", "XA PREPARE '" + xid + "'"} {
		_, err := c.ExecContext(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	_ = c.Raw(func(any) error { return driver.ErrBadConn }) // the session goes; the branch stays

	sealed := make(chan int64, 1)
	go func() {
		w, err := st.Nodes().QueueSeal(ctx, models.QueueMove{From: q}, models.PrimaryNodeID)
		assert.NoError(t, err)
		sealed <- w
	}()
	select {
	case w := <-sealed:
		t.Fatalf("sealed at watermark %d over a prepared branch", w)
	case <-time.After(700 * time.Millisecond):
	}
	_, err = st.DB().ExecContext(ctx, "XA COMMIT '"+xid+"'")
	require.NoError(t, err)
	select {
	case w := <-sealed:
		require.EqualValues(t, 2, w, "the committed branch's row is within the watermark")
	case <-time.After(10 * time.Second):
		t.Fatal("the seal did not end after the branch committed")
	}
}
