package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
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

// moveTopic reads GET /topics/{name}: its live queue ids and its unretired moves.
func moveTopic(t *testing.T, h *heraldtest.Herald, name string) (queues []int64, states []string, moves []map[string]any) {
	var out struct {
		Queues []struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
		} `json:"queues"`
		Moves []map[string]any `json:"moves"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/topics/"+name, nil, 200), &out))
	for _, q := range out.Queues {
		queues, states = append(queues, q.ID), append(states, q.State)
	}
	return queues, states, out.Moves
}

// TestTopicMoveUnderLoad publishes keyed (20 keys) and keyless messages at about
// 400 a second for 4 s to a 4-queue topic with three groups — ordered by key (5 %
// of POSTs fail, retried in 1 s), ordered by queue, unordered — and moves the topic
// onto 4 fresh queues on node 1 after 1.5 s. No publish is refused, every group
// gets every message, each ordered group gets every key exactly in publish order,
// and the old queues are retired (cursors deleted, tables dropped) once drained.
func TestTopicMoveUnderLoad(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, func(c *config.Config) { c.Maintenance.OutboxInterval = 300 * time.Millisecond })
	h.CreateTopic("mv", 4)
	old, _, _ := moveTopic(t, h, "mv")
	keys := keyNames(20)
	byKey, byQueue, free := newKeyLog(-1), newKeyLog(-1), newKeyLog(-1)
	rk, rq, ru := heraldtest.NewReceiver(t), heraldtest.NewReceiver(t), heraldtest.NewReceiver(t)
	byKey.respond(rk, 3*time.Millisecond, func([]orderedMsg, []int) bool { return rand.IntN(100) < 5 })
	byQueue.respond(rq, 2*time.Millisecond, func([]orderedMsg, []int) bool { return false })
	free.respond(ru, 2*time.Millisecond, func([]orderedMsg, []int) bool { return false })
	rk.SetSecret(h.CreateGroup(orderedGroup("by-key", rk.URL, "mv", map[string]any{"ordering": "key"})))
	rq.SetSecret(h.CreateGroup(orderedGroup("by-queue", rq.URL, "mv", nil)))
	unordered := orderedGroup("free", ru.URL, "mv", map[string]any{"ordered": false})
	delete(unordered, "ordering")
	ru.SetSecret(h.CreateGroup(unordered))
	apiKey := h.CreateAPIKey("mv")

	// Four publishers, each owning every fourth key (so a key's messages are
	// published one after another), each sending 5 messages (4 keyed, 1 keyless)
	// every 50 ms: about 400 messages a second.
	const publishers, runFor = 4, 4 * time.Second
	sent := make([]map[string]int, publishers) // per publisher: key → messages sent
	var keyless, refused atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for p := range publishers {
		sent[p] = map[string]int{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for i := 0; time.Since(start) < runFor; i++ {
				<-tick.C
				msgs := make([]map[string]any, 0, 5)
				for j := range 4 {
					k := keys[(p+4*((i*4+j)%5))%len(keys)]
					msgs = append(msgs, map[string]any{"key": k, "body": orderedMsg{K: k, N: sent[p][k]}})
					sent[p][k]++
				}
				n := int(keyless.Add(1))
				msgs = append(msgs, map[string]any{"body": orderedMsg{K: "", N: n}})
				code, body, _ := h.Do("POST", "/v1/topics/mv/messages", apiKey, map[string]any{"messages": msgs})
				if code != 201 {
					refused.Add(1)
					t.Errorf("publish refused during the move: %d %s", code, body)
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	moveStart := time.Now()
	h.Admin("POST", "/topics/mv/move", map[string]any{"to_node": 1}, 202)
	t.Logf("the move call (4 new queues, 4 seals) took %v", time.Since(moveStart))
	h.Admin("POST", "/topics/mv/move", map[string]any{"to_node": 1}, 409) // already moving
	wg.Wait()
	require.Zero(t, refused.Load())

	want := map[string]int{}
	total := 0
	for p := range publishers {
		for k, n := range sent[p] {
			want[k] += n
			total += n
		}
	}
	require.Len(t, want, len(keys))
	nKeyless := int(keyless.Load())
	t.Logf("published %d keyed and %d keyless messages in %v", total, nKeyless, time.Since(start))
	all := func(o *keyLog) bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		for k, n := range want {
			if len(o.acked[k]) < n {
				return false
			}
		}
		return len(o.acked[""]) >= nKeyless
	}
	for name, o := range map[string]*keyLog{"by-key": byKey, "by-queue": byQueue, "free": free} {
		require.Eventually(t, func() bool { return all(o) }, 2*time.Minute, 20*time.Millisecond, "group %s did not get every message", name)
		o.mu.Lock()
		got := slices.Sorted(slices.Values(o.acked[""]))
		o.mu.Unlock()
		require.Equal(t, seq(nKeyless + 1)[1:], slices.Compact(got), "group %s lost keyless messages", name)
	}
	for k, n := range want {
		require.Equal(t, seq(n), byKey.ackedOf(k), "by-key: key %s out of order or twice", k)
		require.Equal(t, seq(n), byQueue.ackedOf(k), "by-queue: key %s out of order or twice", k)
		got := slices.Sorted(slices.Values(free.ackedOf(k)))
		require.Equal(t, seq(n), slices.Compact(got), "free: key %s lost messages", k)
	}

	// The old queues drain and retire: cursors deleted, tables dropped.
	require.Eventually(t, func() bool {
		_, _, moves := moveTopic(t, h, "mv")
		return len(moves) == 0
	}, time.Minute, 50*time.Millisecond, "the old queues were not retired")
	t.Logf("old queues retired %v after the move began", time.Since(moveStart))
	now, states, _ := moveTopic(t, h, "mv")
	require.Len(t, now, 4)
	for i, q := range now {
		require.NotContains(t, old, q)
		require.Equal(t, string(models.QueueReadWrite), states[i])
	}
	for _, q := range old {
		var tables, cursors int
		require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", models.QueueTableName(q)).Scan(&tables))
		require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(*) FROM cursors WHERE queue_id = ?", q).Scan(&cursors))
		require.Zero(t, tables, "queue %d's table is still there", q)
		require.Zero(t, cursors, "queue %d still has cursors", q)
		var state string
		require.NoError(t, h.Store.DB().QueryRow("SELECT state FROM queues WHERE id = ?", q).Scan(&state))
		require.Equal(t, string(models.QueueRetired), state)
	}
	var audited int
	require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(*) FROM audit_log WHERE action = 'topic.move'").Scan(&audited))
	require.Equal(t, 1, audited)
	// The topic moves again once the first move is retired.
	h.Admin("POST", "/topics/mv/move", map[string]any{"to_node": 1}, 202)
}

// TestTopicMoveRefusals checks a move's problem types: an unknown node, a node that
// is not read-write, a missing body field, a dead-letter topic, and a grown topic's
// spread_keys (not built).
func TestTopicMoveRefusals(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("mr", 2)
	problemType := func(body []byte) string {
		var p struct{ Type string }
		require.NoError(t, json.Unmarshal(body, &p))
		return p.Type
	}
	require.Equal(t, "https://herald.dev/problems/unknown-node", problemType(h.Admin("POST", "/topics/mr/move", map[string]any{"to_node": 99}, 422)))
	require.Equal(t, "https://herald.dev/problems/validation", problemType(h.Admin("POST", "/topics/mr/move", map[string]any{}, 422)))
	h.Admin("POST", "/topics/nope/move", map[string]any{"to_node": 1}, 404)
	require.Equal(t, "https://herald.dev/problems/not-built", problemType(h.Admin("PATCH", "/topics/mr", map[string]any{"queues": 3, "spread_keys": true}, 422)))
	h.Admin("PATCH", "/topics/mr", map[string]any{"queues": 3, "spread_keys": false}, 200)
}

// TestNodeDrain drains db nodes: node 1 (the control database) is refused; a second
// node (another database on the same server, registered read-only) drains — it
// holds no queues, so nothing moves and it answers 200, not 202 — and can then be
// retired; an unknown node is a 404.
func TestNodeDrain(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	out := h.Admin("POST", "/nodes/1/drain", nil, 422)
	require.Contains(t, string(out), "control database")
	db := "herald_drain_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	_, err := h.Store.DB().Exec("CREATE DATABASE " + db)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = h.Store.DB().Exec("DROP DATABASE " + db) })
	cfg, err := mysql.ParseDSN(h.DSN)
	require.NoError(t, err)
	cfg.DBName = db
	var n struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/nodes", map[string]any{"name": "second", "dsn": cfg.FormatDSN()}, 201), &n))
	var res struct {
		Node struct {
			State string `json:"state"`
		} `json:"node"`
		MovedTopics []string `json:"moved_topics"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", fmt.Sprintf("/nodes/%d/drain", n.ID), nil, 200), &res))
	require.Equal(t, "draining", res.Node.State)
	require.Empty(t, res.MovedTopics)
	h.Admin("PATCH", fmt.Sprintf("/nodes/%d", n.ID), map[string]any{"state": "retired"}, 200)
	h.Admin("POST", fmt.Sprintf("/nodes/%d/drain", n.ID), nil, 409)
	h.Admin("POST", "/nodes/99/drain", nil, 404)
}
