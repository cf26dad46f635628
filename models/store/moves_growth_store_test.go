package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestTopicGrowAndMoveConcurrent races 6 growths (each by one queue, from the
// topic it read) and 3 moves to node 2 of one 2-queue topic, started at once, over
// 4 rounds with a fresh topic each. Node 2 has weight 1, so a growth places its
// queue on node 1, the node the topic leaves. In every round: each call returns
// nil or ErrTopicMoving; exactly one move wins; every queue an applied growth added
// is one of the winning move's old queues (it moved with the topic); the topic's
// live queues are exactly the move's new queues, all on node 2, and its sealing
// queues exactly the move's old ones (no live queue is left on node 1); every
// queue has its subscribed group's cursor; and the queue tables on both nodes are
// exactly the queue rows (no orphan table).
func TestTopicGrowAndMoveConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, st := heraldtest.Database(t)
	st.SetPoolSize(32) // each caller holds one connection in its transaction while the lock holder creates tables on another

	db := "herald_grow_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	_, err := st.DB().Exec("CREATE DATABASE " + db)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = st.DB().Exec("DROP DATABASE " + db) })
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.DBName = db
	second := &models.Node{Name: "grow-2", DSN: cfg.FormatDSN(), Weight: 1, State: models.NodeReadWrite}
	require.NoError(t, st.Nodes().NodeCreate(ctx, second))
	db2, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer db2.Close()

	const growths, moves = 6, 3
	applied, refused := 0, 0
	for round := range 4 {
		name := fmt.Sprintf("grow-race-%d", round)
		_, err := st.TopicCreate(ctx, name, 2)
		require.NoError(t, err)
		g := &models.Group{Name: name + "-g", EndpointURL: "https://example.com/hook", SigningSecret: signing.NewSecret(),
			Subscriptions: []models.Subscription{{Topic: name}}}
		g.ApplyDefaults()
		require.NoError(t, st.GroupCreate(ctx, g))

		type result struct {
			move  bool
			err   error
			added []int64            // queues an applied growth added
			moves []models.QueueMove // the winning move's
		}
		results := make(chan result, growths+moves)
		start := make(chan struct{})
		for i := range growths + moves {
			go func() {
				<-start
				tp, err := st.TopicGetByName(ctx, name)
				if err != nil {
					results <- result{err: err}
					return
				}
				if i < moves {
					ms, err := st.Nodes().TopicMoveBegin(ctx, tp, second.ID)
					results <- result{move: true, err: err, moves: ms}
					return
				}
				before := make([]int64, len(tp.Queues))
				for j, q := range tp.Queues {
					before[j] = q.ID
				}
				r := result{err: st.TopicAddQueues(ctx, tp, len(tp.Queues)+1)}
				for _, q := range tp.Queues {
					if r.err == nil && !slices.Contains(before, q.ID) {
						r.added = append(r.added, q.ID)
					}
				}
				results <- r
			}()
		}
		close(start)
		var won []models.QueueMove
		wins := 0
		var grown []int64
		for range growths + moves {
			r := <-results
			if r.err != nil {
				require.ErrorIs(t, r.err, store.ErrTopicMoving, "round %d", round)
				if !r.move {
					refused++
				}
				continue
			}
			if r.move {
				wins++
				won = r.moves
				continue
			}
			applied++
			for _, q := range r.added {
				// Growths that read the same count grow to the same total: the
				// first adds the queue, the rest find it there.
				if !slices.Contains(grown, q) {
					grown = append(grown, q)
				}
			}
		}
		require.Equal(t, 1, wins, "round %d: one move wins", round)

		var from, to []int64
		for _, m := range won {
			from = append(from, m.From)
			to = append(to, m.To)
		}
		for _, q := range grown {
			require.Contains(t, from, q, "round %d: a grown queue moved with the topic", round)
		}
		tp, err := st.TopicGetByName(ctx, name)
		require.NoError(t, err)
		var live, sealing []int64
		for _, q := range tp.Queues {
			switch q.State {
			case models.QueueReadWrite, models.QueueReadOnly:
				require.Equal(t, second.ID, q.NodeID, "round %d: live queue %d is on node 2", round, q.ID)
				live = append(live, q.ID)
			case models.QueueSealing:
				sealing = append(sealing, q.ID)
			default:
				require.Fail(t, "unexpected queue state", "round %d: queue %d is %s", round, q.ID, q.State)
			}
		}
		require.ElementsMatch(t, to, live, "round %d: the live queues are the move's new queues", round)
		require.ElementsMatch(t, from, sealing, "round %d: the sealing queues are the move's old queues", round)
		require.Len(t, from, 2+len(grown), "round %d: the move took the 2 first queues and every grown one", round)
		var cursors int
		require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM cursors WHERE group_id = ?", g.ID).Scan(&cursors))
		require.Equal(t, len(tp.Queues), cursors, "round %d: a cursor on every queue", round)
		t.Logf("round %d: %d queues grown before the move, the move took %d queues", round, len(grown), len(from))
	}
	t.Logf("over 4 rounds: %d growths answered nil (applied, or found their count reached), %d refused as moving", applied, refused)

	var rows, on1, on2 int
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM queues WHERE state <> 'retired'").Scan(&rows))
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name REGEXP '^queue_[0-9]+$'").Scan(&on1))
	require.NoError(t, db2.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name REGEXP '^queue_[0-9]+$'").Scan(&on2))
	require.Equal(t, rows, on1+on2, "a table for every queue row and none else (%d on node 1, %d on node 2)", on1, on2)
	var onNode1 int
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM queues WHERE node_id = ? AND state <> 'retired'", models.PrimaryNodeID).Scan(&onNode1))
	require.Equal(t, onNode1, on1, "node 1's tables are its queue rows'")
}
