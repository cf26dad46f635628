package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/models"
)

// TestTwoNodesPublishAndDeliver runs Herald on two MySQL servers: the control
// database (node 1) and a private mariadbd added as node 2 through the API. A topic
// whose queues span both nodes takes keyless and keyed messages through the public
// API, and a keyed request whose keys live on both nodes (stored under XA); every
// message is delivered with exactly its body. Statements are counted on both
// servers: the control database sees at most 0.05 statements per message that do
// not touch a queue table while the messages are published and delivered, and the
// data node costs about what node 1 costs for its queues. The control statements
// over the whole run (publishing and delivery) are logged.
func TestTwoNodesPublishAndDeliver(t *testing.T) {
	t.Parallel()
	nodeDSN := heraldtest.StartMariaDB(t, "herald_node2")
	var control *heraldtest.SQLCounter
	// The api alone while publishing, so what the control database sees then is the
	// publish path's; dispatcher and worker start afterwards and deliver.
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, func(c *config.Config) {
		control = heraldtest.NewSQLCounter(t, c.MySQLDSN)
		c.MySQLDSN = control.ProxiedDSN(t, c.MySQLDSN)
	})
	data := heraldtest.NewSQLCounter(t, nodeDSN)
	var node struct {
		ID    int64  `json:"id"`
		State string `json:"state"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/nodes", map[string]any{"name": "data-2", "dsn": data.ProxiedDSN(t, nodeDSN), "state": "read-write", "weight": 100}, 201), &node))
	require.Equal(t, "read-write", node.State)

	var topic struct {
		Queues []struct {
			ID   int64 `json:"id"`
			Node int64 `json:"node"`
		} `json:"queues"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/topics", map[string]any{"name": "orders", "queues": 4}, 201), &topic))
	onNode := map[int64]int64{}
	for _, q := range topic.Queues {
		n, err := h.Store.Nodes().QueueNode(t.Context(), q.ID)
		require.NoError(t, err)
		onNode[q.ID] = n
	}
	perNode := map[int64]int{}
	for _, n := range onNode {
		perNode[n]++
	}
	require.Len(t, perNode, 2, "the topic's queues span both nodes: %v", onNode)
	// The queue tables of node 2 live on node 2's server only.
	db2, err := sql.Open("mysql", nodeDSN)
	require.NoError(t, err)
	defer db2.Close()
	for q, n := range onNode {
		var count int
		require.NoError(t, db2.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", models.QueueTableName(q)).Scan(&count))
		require.Equal(t, n == node.ID, count == 1, "queue %d on node %d", q, n)
	}

	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "orders"}}}))
	key := h.CreateAPIKey("orders")

	// A keyed request whose keys hash to queues on both nodes is stored whole (XA).
	keys := keysOnNodes(t, h, "orders", onNode)
	cross := h.Publish(key, "orders", map[string]any{"body": "cross-1", "key": keys[models.PrimaryNodeID]}, map[string]any{"body": "cross-2", "key": keys[node.ID]})
	require.NotEqual(t, onNode[cross[0].Queue], onNode[cross[1].Queue])

	start := time.Now()
	bodies := map[string]string{cross[0].ID: `"cross-1"`, cross[1].ID: `"cross-2"`}
	var mu sync.Mutex
	var wg sync.WaitGroup
	const publishers, requests, batch = 8, 25, 10 // 2,000 keyless messages
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range requests {
				msgs := make([]map[string]any, batch)
				for j := range msgs {
					msgs[j] = map[string]any{"body": fmt.Sprintf("k%d-%d-%d", p, i, j)}
				}
				for j, m := range h.Publish(key, "orders", msgs...) {
					mu.Lock()
					bodies[m.ID] = fmt.Sprintf(`"k%d-%d-%d"`, p, i, j)
					mu.Unlock()
				}
				// Keyed: one key per publisher, its queue on either node.
				m := h.Publish(key, "orders", map[string]any{"body": fmt.Sprintf("p%d-%d", p, i), "key": fmt.Sprintf("customer-%d", p)})
				mu.Lock()
				bodies[m[0].ID] = fmt.Sprintf(`"p%d-%d"`, p, i)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	published := time.Now()
	total := len(bodies)
	require.Equal(t, 2+publishers*requests*(batch+1), total)
	h.Start(app.Roles{Dispatcher: true, Worker: true})
	r.WaitCount(total, 60*time.Second)
	for id, body := range bodies {
		ds := r.Get(id)
		require.NotEmpty(t, ds, id)
		require.Equal(t, body, string(ds[0].Body), id)
	}
	stored := map[int64]int{}
	for id := range bodies {
		q, _, err := models.ParseMessageID(id)
		require.NoError(t, err)
		stored[onNode[q]]++
	}
	require.Positive(t, stored[models.PrimaryNodeID])
	require.Positive(t, stored[node.ID])

	// The per-message path is publishing: what the control database sees meanwhile
	// is the roles' clocks (heartbeats, commits, polls), not a statement per message
	// or per flush.
	var publishWindow []heraldtest.Statement
	for _, st := range control.Since(start) {
		if st.At.Before(published) {
			publishWindow = append(publishWindow, st)
		}
	}
	pubOther, _ := classify(publishWindow)
	t.Logf("publishing took %v; control statements off queue tables meanwhile: %d (%s)", published.Sub(start), pubOther, topKinds(publishWindow))
	require.LessOrEqual(t, float64(pubOther)/float64(total), 0.05, "control statements per message while publishing")
	controlOther, controlQueue := classify(control.Since(start))
	dataOther, dataQueue := classify(data.Since(start))
	t.Logf("node 2 statements off queue tables: %s", topKinds(data.Since(start)))
	t.Logf("messages: %d (node 1: %d, node 2: %d); control db: %d statements off queue tables, %d on node 1's queue tables; node 2: %d on queue tables, %d others",
		total, stored[models.PrimaryNodeID], stored[node.ID], controlOther, controlQueue, dataQueue, dataOther)
	perMsg1 := float64(controlQueue) / float64(stored[models.PrimaryNodeID])
	perMsg2 := float64(dataQueue+dataOther) / float64(stored[node.ID])
	t.Logf("queue-table statements per message: node 1 %.3f, node 2 %.3f (all statements)", perMsg1, perMsg2)
	require.Less(t, perMsg2, 2*perMsg1+0.05, "node 2 costs about what node 1 costs per message")
}

// topKinds names the most frequent statements off queue tables (their first 40
// bytes) with their counts.
func topKinds(stmts []heraldtest.Statement) string {
	n := map[string]int{}
	for _, s := range stmts {
		if other, _ := classify([]heraldtest.Statement{s}); other == 1 {
			n[s.SQL[:min(len(s.SQL), 40)]]++
		}
	}
	kinds := make([]string, 0, len(n))
	for k := range n {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return n[kinds[i]] > n[kinds[j]] })
	var b strings.Builder
	for _, k := range kinds[:min(len(kinds), 8)] {
		fmt.Fprintf(&b, "%d× %q; ", n[k], k)
	}
	return b.String()
}

// classify counts statements that touch no queue table (control work) and those
// that do; START TRANSACTION, COMMIT and ROLLBACK count with the queue tables (on the
// control database while only the api runs they wrap node 1's multi-queue flushes).
func classify(stmts []heraldtest.Statement) (other, queue int) {
	for _, s := range stmts {
		if strings.Contains(s.SQL, "queue_0") || s.SQL == "START TRANSACTION" || s.SQL == "COMMIT" || s.SQL == "ROLLBACK" {
			queue++
		} else {
			other++
		}
	}
	return other, queue
}

// keysOnNodes finds, for each node of onNode, a message key whose queue is on it,
// from the topic's slot table.
func keysOnNodes(t *testing.T, h *heraldtest.Herald, topic string, onNode map[int64]int64) map[int64]string {
	t.Helper()
	tp, err := h.Store.TopicGetByName(t.Context(), topic)
	require.NoError(t, err)
	out := map[int64]string{}
	for i := 0; len(out) < 2 && i < 10000; i++ {
		k := fmt.Sprintf("key-%d", i)
		q, ok := tp.QueueForKey(k)
		require.True(t, ok)
		if _, seen := out[onNode[q.ID]]; !seen {
			out[onNode[q.ID]] = k
		}
	}
	require.Len(t, out, 2)
	return out
}

// TestNodeOutageIsLocal kills node 2's mariadbd (SIGKILL) under a topic spanning
// both nodes: a keyed message whose queue is on node 2 gets 503 queue-unavailable
// with Retry-After; keyless publishes go on (after at most one failure they
// avoid the dead node) and are delivered from node 1; /readyz stays ready and
// reports node 2 down.
func TestNodeOutageIsLocal(t *testing.T) {
	t.Parallel()
	nodeDSN := heraldtest.StartMariaDB(t, "herald_node2")
	h := heraldtest.StartHerald(t, nil)
	var node struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/nodes", map[string]any{"name": "data-2", "dsn": nodeDSN, "state": "read-write"}, 201), &node))
	tp, err := func() (*models.Topic, error) {
		h.CreateTopic("t", 4)
		return h.Store.TopicGetByName(t.Context(), "t")
	}()
	require.NoError(t, err)
	onNode := map[int64]int64{}
	for _, q := range tp.Queues {
		onNode[q.ID] = q.NodeID
	}
	keys := keysOnNodes(t, h, "t", onNode)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	h.Publish(key, "t", map[string]any{"body": "before", "key": keys[node.ID]})

	db2, err := sql.Open("mysql", nodeDSN)
	require.NoError(t, err)
	defer db2.Close()
	var pidFile string
	require.NoError(t, db2.QueryRow("SELECT @@pid_file").Scan(&pidFile))
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.Eventually(t, func() bool { return db2.Ping() != nil }, 10*time.Second, 50*time.Millisecond)

	// The first publish may go out on a pooled connection to the killed node whose
	// reset arrives after the INSERT was written: the api cannot tell whether the
	// node committed it and says so ("unavailable", retry with the same
	// Idempotency-Key). Once that connection is gone the node is known down.
	code, body, hdr := h.Do("POST", "/v1/topics/t/messages", key, map[string]any{"messages": []any{map[string]any{"body": 1, "key": keys[node.ID]}}})
	if code == 503 && strings.Contains(string(body), "problems/unavailable") {
		require.NotEmpty(t, hdr.Get("Retry-After"))
		code, body, hdr = h.Do("POST", "/v1/topics/t/messages", key, map[string]any{"messages": []any{map[string]any{"body": 1, "key": keys[node.ID]}}})
	}
	requireProblem(t, code, body, hdr, 503, "queue-unavailable")
	require.NotEmpty(t, hdr.Get("Retry-After"))

	var stored []string
	failures := 0
	began := time.Now()
	for i := range 20 {
		code, body, _ := h.Do("POST", "/v1/topics/t/messages", key, map[string]any{"messages": []any{map[string]any{"body": i}}})
		if code != 201 {
			require.Equal(t, 503, code, string(body))
			failures++
			continue
		}
		var out struct{ Messages []heraldtest.Published }
		require.NoError(t, json.Unmarshal(body, &out))
		require.Equal(t, models.PrimaryNodeID, onNode[out.Messages[0].Queue])
		stored = append(stored, out.Messages[0].ID)
	}
	t.Logf("keyless publishes after the kill: %d stored, %d refused", len(stored), failures)
	// A failed flush (or the background probe) marks the node down; keyless requests
	// avoid it until a probe finds it answering: at most the first reaches it.
	require.LessOrEqual(t, failures, 1, "keyless publishes after %v", time.Since(began))
	require.Eventually(t, func() bool {
		for _, id := range stored {
			if len(r.Get(id)) == 0 {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "node 1's messages are delivered while node 2 is down")

	code, body, _ = h.Do("GET", "/readyz", "", nil)
	require.Equal(t, 200, code, string(body))
	var ready struct {
		Status string            `json:"status"`
		Nodes  map[string]string `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal(body, &ready))
	require.Equal(t, "ready", ready.Status)
	require.Equal(t, "up", ready.Nodes["1"])
	require.True(t, strings.HasPrefix(ready.Nodes[strconv.FormatInt(node.ID, 10)], "down"), ready.Nodes)
}
