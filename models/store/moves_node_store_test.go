package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestQueueSealOnSecondNode moves a topic whose two queues span node 1 and a second
// server (a private mariadbd) onto node 1. The seal of the queue on node 2 runs on
// that node and waits for a transaction there that inserted into it; its watermark
// is that row's id. A stale writer's insert into the sealed queue on node 2, alone
// or in a request spanning both old queues (XA), fails with ErrQueueSealed and
// stores nothing on either node; retiring drops the table on node 2, and the
// fallback poll's read of max offsets leaves dropped queues out.
func TestQueueSealOnSecondNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	dsn2 := heraldtest.StartMariaDB(t, "herald_seal")
	second := &models.Node{Name: "data-2", DSN: dsn2, Weight: 100, State: models.NodeReadWrite}
	require.NoError(t, st.Nodes().NodeCreate(ctx, second))
	topic, err := st.TopicCreate(ctx, "seal2", 2)
	require.NoError(t, err)
	q1, q2 := topic.Queues[0], topic.Queues[1]
	require.Equal(t, models.PrimaryNodeID, q1.NodeID)
	require.Equal(t, second.ID, q2.NodeID)
	db2, err := sql.Open("mysql", dsn2)
	require.NoError(t, err)
	defer db2.Close()
	msg := func(q int64) models.Message {
		return models.Message{QueueID: q, Key: "k", Body: []byte(`{}`), ContentType: "application/json", CreatedAt: time.Now().UnixMilli()}
	}
	one := func(qs ...int64) []*store.PublishRequest {
		r := &store.PublishRequest{TopicID: topic.ID}
		for _, q := range qs {
			r.Messages = append(r.Messages, msg(q))
		}
		return []*store.PublishRequest{r}
	}
	require.NoError(t, st.Queues().MessagesInsert(ctx, one(q2.ID)))

	// A stale writer's transaction on node 2 inserted into q2 and has not committed.
	tx, err := db2.BeginTx(ctx, nil)
	require.NoError(t, err)
	res, err := tx.ExecContext(ctx, "INSERT INTO "+models.QueueTableName(q2.ID)+" (msg_key, body, content_type, created_at) VALUES ('b', '{}', 'application/json', 0)")
	require.NoError(t, err)
	staleID, err := res.LastInsertId()
	require.NoError(t, err)

	moves, err := st.Nodes().TopicMoveBegin(ctx, topic, models.PrimaryNodeID)
	require.NoError(t, err)
	require.Len(t, moves, 2)
	var m1, m2 models.QueueMove
	for _, m := range moves {
		n, err := st.Nodes().QueueNode(ctx, m.To)
		require.NoError(t, err)
		require.Equal(t, models.PrimaryNodeID, n)
		if m.From == q2.ID {
			m2 = m
		} else {
			m1 = m
			m1.Watermark, err = st.Nodes().QueueSeal(ctx, m, models.PrimaryNodeID)
			require.NoError(t, err)
		}
	}
	type sealed struct {
		w   int64
		err error
	}
	done := make(chan sealed, 1)
	go func() {
		w, err := st.Nodes().QueueSeal(ctx, m2, second.ID)
		done <- sealed{w, err}
	}()
	require.Eventually(t, func() bool {
		var n int
		_ = db2.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE state LIKE 'Waiting for table metadata lock' AND info LIKE 'CREATE TRIGGER%'").Scan(&n)
		return n == 1
	}, 10*time.Second, 10*time.Millisecond, "the seal on node 2 did not wait for the open insert there")
	require.NoError(t, tx.Commit())
	s := <-done
	require.NoError(t, s.err)
	require.Equal(t, staleID, s.w)

	count := func(db *sql.DB, q int64) int {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+models.QueueTableName(q)).Scan(&n))
		return n
	}
	require.ErrorIs(t, st.Queues().MessagesInsert(ctx, one(q2.ID)), models.ErrQueueSealed)
	require.ErrorIs(t, st.Queues().MessagesInsert(ctx, one(q1.ID, q2.ID)), models.ErrQueueSealed)
	require.Equal(t, 2, count(db2, q2.ID))
	require.Zero(t, count(st.DB(), q1.ID))

	m2.Watermark = s.w
	_, retired, err := st.Nodes().QueueRetire(ctx, m2, second.ID)
	require.NoError(t, err)
	require.True(t, retired)
	var tables int
	require.NoError(t, db2.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", models.QueueTableName(q2.ID)).Scan(&tables))
	require.Zero(t, tables)

	// A poller that still lists the dropped queue reads the others and leaves it
	// out, on node 2 and on node 1 alike.
	_, retired, err = st.Nodes().QueueRetire(ctx, m1, models.PrimaryNodeID)
	require.NoError(t, err)
	require.True(t, retired)
	require.NoError(t, st.Queues().MessagesInsert(ctx, one(m2.To)))
	maxIDs, err := st.Queues().QueueMaxIDs(ctx, []int64{q1.ID, q2.ID, m1.To, m2.To})
	require.NoError(t, err)
	require.Equal(t, map[int64]int64{m1.To: 0, m2.To: 1}, maxIDs)
}
