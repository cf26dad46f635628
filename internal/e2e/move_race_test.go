package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/models"
)

// fastRetire runs the maintenance role's move duty every 300 ms (5 s by default),
// so old queues retire quickly.
func fastRetire(c *config.Config) { c.Maintenance.OutboxInterval = 300 * time.Millisecond }

// secondNode registers another database on the control database's server as a
// read-write db node (as cheap as a node gets: no second server) and returns its id
// and a pool on that database.
func secondNode(t *testing.T, h *heraldtest.Herald, name string) (int64, *sql.DB) {
	t.Helper()
	db := "herald_" + name + "_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	_, err := h.Store.DB().Exec("CREATE DATABASE " + db)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = h.Store.DB().Exec("DROP DATABASE " + db) })
	cfg, err := mysql.ParseDSN(h.DSN)
	require.NoError(t, err)
	cfg.DBName = db
	var n struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/nodes", map[string]any{"name": name, "dsn": cfg.FormatDSN(), "state": "read-write", "weight": 100}, 201), &n))
	pool, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { pool.Close() })
	return n.ID, pool
}

// send posts body as JSON to url with a bearer token and returns the status and
// response body; a transport error is status 0 (safe from any goroutine).
func send(method, url, bearer string, body any) (int, string) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// publisher posts keyed and keyless messages to topic every 20 ms from two
// goroutines until stop is called, which returns how many messages were stored;
// every refused publish fails the test with its answer.
func publisher(t *testing.T, h *heraldtest.Herald, topic, apiKey string) (stop func() int) {
	var wg sync.WaitGroup
	var stored atomic.Int64
	done := make(chan struct{})
	for p := range 2 {
		wg.Go(func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				msgs := []map[string]any{{"key": fmt.Sprintf("k%d-%d", p, i%7), "body": i}, {"body": i}}
				code, body := send("POST", h.BaseURL+"/v1/topics/"+topic+"/messages", apiKey, map[string]any{"messages": msgs})
				if code != 201 {
					t.Errorf("publish refused during moves: %d %s", code, body)
					continue
				}
				stored.Add(int64(len(msgs)))
			}
		})
	}
	var once sync.Once
	stop = func() int {
		once.Do(func() { close(done); wg.Wait() })
		return int(stored.Load())
	}
	t.Cleanup(func() { stop() })
	return stop
}

// problemOf decodes a problem+json answer's type.
func problemOf(t *testing.T, body string) string {
	var p struct{ Type string }
	require.NoError(t, json.Unmarshal([]byte(body), &p), body)
	return p.Type
}

// TestConcurrentMovesOneWins sends 8 moves of one 2-queue topic at once (four to
// node 1, four to a second node) while it is published to: exactly one answers
// 202, every other 409 topic-moving; the topic ends with 2 live queues, no
// orphaned queue row or table, and the group gets every message. Repeated 3 times,
// each once the previous move retired.
func TestConcurrentMovesOneWins(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, fastRetire)
	n2, db2 := secondNode(t, h, "race")
	h.CreateTopic("cm", 2)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 1, "subscriptions": []map[string]any{{"topic": "cm"}}}))
	stop := publisher(t, h, "cm", h.CreateAPIKey("cm"))
	token := h.Token()
	for round := range 3 {
		const n = 8
		codes := make([]int, n)
		bodies := make([]string, n)
		var start, wg sync.WaitGroup
		start.Add(1)
		for i := range n {
			node := int64(models.PrimaryNodeID)
			if i%2 == 1 {
				node = n2
			}
			wg.Go(func() {
				start.Wait()
				codes[i], bodies[i] = send("POST", h.BaseURL+"/api/v1/topics/cm/move", token, map[string]any{"to_node": node})
			})
		}
		start.Done()
		wg.Wait()
		won := 0
		for i, c := range codes {
			switch c {
			case 202:
				won++
			case 409:
				require.Equal(t, "https://herald.dev/problems/topic-moving", problemOf(t, bodies[i]), "round %d", round)
			default:
				t.Fatalf("round %d: move answered %d %s", round, c, bodies[i])
			}
		}
		require.Equal(t, 1, won, "round %d: %v", round, codes)
		qs, states, _ := moveTopic(t, h, "cm")
		var moveRows int
		require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(*) FROM queue_moves m JOIN topics t ON t.id = m.topic_id WHERE t.name = 'cm'").Scan(&moveRows))
		require.Equal(t, 2*(round+1), moveRows, "round %d: one move per round, sealing each of the 2 queues", round)
		live := 0
		for _, s := range states {
			if s == string(models.QueueReadWrite) {
				live++
			}
		}
		require.Equal(t, 2, live, "round %d: queues %v %v", round, qs, states)
		var orphans int
		require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(*) FROM queues q JOIN topics t ON t.id = q.topic_id WHERE t.name = 'cm' AND q.state = 'read_only'").Scan(&orphans))
		require.Zero(t, orphans, "round %d: a losing move left its queues", round)
		require.Eventually(t, func() bool {
			_, _, moves := moveTopic(t, h, "cm")
			return len(moves) == 0
		}, time.Minute, 50*time.Millisecond, "round %d: the old queues were not retired", round)
	}
	sent := stop()
	r.WaitCount(sent, time.Minute)
	// Every queue table the topic ever had is either live with its table on its
	// node, or retired with its table dropped: a losing move's tables are gone.
	requireNoStrayTables(t, h, "cm", n2, db2)
}

// requireNoStrayTables requires every queue of topic not retired to have its table
// on its node, and every retired one (or a losing move's) to have none on either
// node; nodes maps node 2's id to its pool.
func requireNoStrayTables(t *testing.T, h *heraldtest.Herald, topic string, n2 int64, db2 *sql.DB) {
	t.Helper()
	rows, err := h.Store.DB().Query("SELECT q.id, q.state FROM queues q JOIN topics t ON t.id = q.topic_id WHERE t.name = ?", topic)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var id int64
		var state string
		require.NoError(t, rows.Scan(&id, &state))
		node, err := h.Store.Nodes().QueueNode(t.Context(), id)
		require.NoError(t, err)
		on1, on2 := 0, 0
		if state != string(models.QueueRetired) {
			if node == n2 {
				on2 = 1
			} else {
				on1 = 1
			}
		}
		require.Equal(t, on1, tableCount(t, h.Store.DB(), id), "queue %d (%s) of node %d on node 1", id, state, node)
		require.Equal(t, on2, tableCount(t, db2, id), "queue %d (%s) of node %d on node %d", id, state, node, n2)
	}
	require.NoError(t, rows.Err())
}

// TestMoveBackRightAfterRetire moves a topic from node 1 to a second node, waits
// until the old queues are retired and at once moves it back, four times over,
// while it is published to: every move answers 202, no publish is refused, and the
// group gets every message.
func TestMoveBackRightAfterRetire(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, fastRetire)
	h.CreateTopic("mb", 3) // before node 2 exists: all its queues on node 1
	n2, db2 := secondNode(t, h, "back")
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 1, "subscriptions": []map[string]any{{"topic": "mb"}}}))
	stop := publisher(t, h, "mb", h.CreateAPIKey("mb"))
	token := h.Token()
	to := n2
	for round := range 4 {
		code, body := send("POST", h.BaseURL+"/api/v1/topics/mb/move", token, map[string]any{"to_node": to})
		require.Equal(t, 202, code, "round %d: move to node %d: %s", round, to, body)
		require.Eventually(t, func() bool {
			_, _, moves := moveTopic(t, h, "mb")
			return len(moves) == 0
		}, time.Minute, 5*time.Millisecond, "round %d: the old queues were not retired", round)
		to = map[int64]int64{n2: models.PrimaryNodeID, models.PrimaryNodeID: n2}[to]
	}
	sent := stop()
	r.WaitCount(sent, time.Minute)
	requireNoStrayTables(t, h, "mb", n2, db2)
}

// TestMoveRacesDrain sends a move of a topic onto a second node and a drain of
// that node together (the drain 0–150 ms later), four times over, while the topic
// is published to. Either
// the drain wins (the move answers 409 node-not-writable, the drain 200 with
// nothing moved) or the move does (202) and the drain, finding the topic still
// moving onto the node, answers 409 topic-moving naming it; draining again once
// that move retired moves it off (202); or the move retired before the drain
// listed the node's topics, and the drain moves it off at once (202). Never does a topic stay live on a draining
// node, no publish is refused, and the group gets every message.
func TestMoveRacesDrain(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, fastRetire)
	h.CreateTopic("dr", 2) // before node 2 exists: both queues on node 1
	n2, db2 := secondNode(t, h, "drace")
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 1, "subscriptions": []map[string]any{{"topic": "dr"}}}))
	stop := publisher(t, h, "dr", h.CreateAPIKey("dr"))
	token := h.Token()
	retired := func(round int) {
		require.Eventually(t, func() bool {
			_, _, moves := moveTopic(t, h, "dr")
			return len(moves) == 0
		}, time.Minute, 20*time.Millisecond, "round %d: the old queues were not retired", round)
	}
	drainURL := fmt.Sprintf("%s/api/v1/nodes/%d/drain", h.BaseURL, n2)
	outcomes := map[string]int{}
	// The drain starts after the move by 0, 20, 60 or 150 ms: a sleep standing for
	// the operator's latency, so both orders (and the drain waiting on the move's
	// lock of the node's row) happen.
	lags := []time.Duration{0, 20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond}
	for round, lag := range lags {
		var moveCode, drainCode int
		var moveBody, drainBody string
		var start, wg sync.WaitGroup
		start.Add(1)
		wg.Go(func() {
			start.Wait()
			moveCode, moveBody = send("POST", h.BaseURL+"/api/v1/topics/dr/move", token, map[string]any{"to_node": n2})
		})
		wg.Go(func() {
			start.Wait()
			time.Sleep(lag)
			drainCode, drainBody = send("POST", drainURL, token, nil)
		})
		start.Done()
		wg.Wait()
		switch {
		case moveCode == 409 && drainCode == 200:
			outcomes["drain first"]++
			require.Equal(t, "https://herald.dev/problems/node-not-writable", problemOf(t, moveBody), "round %d", round)
			require.Contains(t, drainBody, `"moved_topics":[]`)
		case moveCode == 202 && drainCode == 409:
			outcomes["move first"]++
			require.Equal(t, "https://herald.dev/problems/topic-moving", problemOf(t, drainBody), "round %d", round)
			require.Contains(t, drainBody, "dr", "the drain names the topic it could not move")
			retired(round)
			code, body := send("POST", drainURL, token, nil)
			require.Equal(t, 202, code, "round %d: drain again: %s", round, body)
			require.Contains(t, body, `"moved_topics":["dr"]`)
		case moveCode == 202 && drainCode == 202:
			// The move's old queues retired before the drain read the node's
			// topics (maintenance every 300 ms): the drain moved it back at once.
			outcomes["move retired first"]++
			require.Contains(t, drainBody, `"moved_topics":["dr"]`)
		default:
			t.Fatalf("round %d: move %d %s; drain %d %s", round, moveCode, moveBody, drainCode, drainBody)
		}
		retired(round)
		qs, states, _ := moveTopic(t, h, "dr")
		require.Len(t, qs, 2, "round %d", round)
		for i, q := range qs {
			n, err := h.Store.Nodes().QueueNode(t.Context(), q)
			require.NoError(t, err)
			require.Equal(t, int64(models.PrimaryNodeID), n, "round %d: queue %d (%s) is on the draining node", round, q, states[i])
		}
		h.Admin("PATCH", fmt.Sprintf("/nodes/%d", n2), map[string]any{"state": "read-write"}, 200)
	}
	t.Logf("outcomes over %d rounds: %v", len(lags), outcomes)
	sent := stop()
	r.WaitCount(sent, time.Minute)
	requireNoStrayTables(t, h, "dr", n2, db2)
}
