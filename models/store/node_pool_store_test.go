package store_test

import (
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestNodeAddedAfterStoreOpened opens a Store (a process) while node 1 is the only
// node and reads a queue's node so its cache is warm; then another Store adds a
// second node (another database on the same server) and moves the topic there.
// The early Store finds the new queues on node 2 (a cache miss reads the queues
// table; nothing assumes node 1), stores a message in node 2's table, not node
// 1's, and reads its offsets there.
func TestNodeAddedAfterStoreOpened(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, st := heraldtest.Database(t)
	early, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	early.SetPoolSize(2)
	defer early.Close()
	topic, err := st.TopicCreate(ctx, "late", 2)
	require.NoError(t, err)
	n, err := early.Nodes().QueueNode(ctx, topic.Queues[0].ID)
	require.NoError(t, err)
	require.Equal(t, int64(models.PrimaryNodeID), n)

	db := "herald_late_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	_, err = st.DB().Exec("CREATE DATABASE " + db)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = st.DB().Exec("DROP DATABASE " + db) })
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.DBName = db
	second := &models.Node{Name: "late-2", DSN: cfg.FormatDSN(), Weight: 100, State: models.NodeReadWrite}
	require.NoError(t, st.Nodes().NodeCreate(ctx, second))
	db2, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer db2.Close()

	moves, err := st.Nodes().TopicMoveBegin(ctx, topic, second.ID)
	require.NoError(t, err)
	require.Len(t, moves, 2)
	q := moves[0].To
	n, err = early.Nodes().QueueNode(ctx, q)
	require.NoError(t, err)
	require.Equal(t, second.ID, n)
	nodes, err := early.Nodes().QueueNodes(ctx, []int64{topic.Queues[1].ID, q})
	require.NoError(t, err)
	require.Equal(t, map[int64]int64{topic.Queues[1].ID: models.PrimaryNodeID, q: second.ID}, nodes)

	msg := models.Message{QueueID: q, Key: "k", Body: []byte(`{}`), ContentType: "application/json", CreatedAt: time.Now().UnixMilli()}
	require.NoError(t, early.Queues().MessagesInsert(ctx, []*store.PublishRequest{{TopicID: topic.ID, Messages: []models.Message{msg}}}))
	var on2 int
	require.NoError(t, db2.QueryRow("SELECT COUNT(*) FROM "+models.QueueTableName(q)).Scan(&on2))
	require.Equal(t, 1, on2, "the message is in node 2's table")
	var on1 int
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", models.QueueTableName(q)).Scan(&on1))
	require.Zero(t, on1, "node 1 has no table of a queue on node 2")
	ranges, err := early.QueueOffsetRanges(ctx, []int64{q})
	require.NoError(t, err)
	require.Equal(t, int64(1), ranges[q].Max)
}

// TestTopicMoveBeginConcurrent starts 6 moves of one 3-queue topic at once on one
// Store: exactly one returns its moves, every other ErrTopicMoving, and no queue
// row or table of a losing move is left.
func TestTopicMoveBeginConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	st.SetPoolSize(16)
	topic, err := st.TopicCreate(ctx, "race", 3)
	require.NoError(t, err)
	type result struct {
		err  error
		took time.Duration
	}
	errs := make(chan result, 6)
	start := make(chan struct{})
	for range 6 {
		go func() {
			<-start
			began := time.Now()
			_, err := st.Nodes().TopicMoveBegin(ctx, topic, models.PrimaryNodeID)
			errs <- result{err, time.Since(began)}
		}()
	}
	close(start)
	won := 0
	var took []time.Duration
	for range 6 {
		r := <-errs
		took = append(took, r.took)
		if r.err == nil {
			won++
			t.Logf("the winning move (3 queues, 3 tables) took %v", r.took)
			continue
		}
		require.ErrorIs(t, r.err, store.ErrTopicMoving)
	}
	t.Logf("every call's time (the losers waited on the topic's row lock): %v", took)
	require.Equal(t, 1, won)
	var rows, tables int
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM queues WHERE topic_id = ?", topic.ID).Scan(&rows))
	require.Equal(t, 6, rows, "3 old queues and the winner's 3")
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name REGEXP '^queue_[0-9]+$'").Scan(&tables))
	require.Equal(t, 6, tables, "no table of a losing move is left")
}
