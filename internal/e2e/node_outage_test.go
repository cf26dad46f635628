package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// outagePublish is one keyless publish of the traffic: when it was sent, its
// status and, when 201, the stored message's id and queue.
type outagePublish struct {
	at    time.Time
	code  int
	id    string
	queue int64
}

// TestNodeOutageUnderTraffic kills a data node (a private mariadbd, SIGKILL) for
// at least 20 s while keyless single-message publishes go to a topic whose 8 queues
// split 3/5 over node 1 and the data node, at about 20 a second with no retries.
// Meanwhile every view that spans nodes answers 200 and says what it cannot read:
// the topic list and topic read (the data node's queues marked unreachable), the
// stats of a group on the dead node's topic (unreachable_nodes) and of a group on
// node 1 only (unaffected), the node read (health down since …), and the console's
// overview, topic, group and Nodes pages. A keyed message whose queue is on the dead
// node answers 503 queue-unavailable with Retry-After. After the first 5 s at least
// 99 % of keyless publishes succeed. When the node is back it reads up, takes
// keyless messages again, every message answered 201 is delivered, and
// herald.events carries one node.down and one node.up for it. It runs twice: with
// the server killed (connections refused) and stopped with SIGSTOP (connections
// accepted, never answered: a stalled or dropped host), then resumed.
func TestNodeOutageUnderTraffic(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"killed", "stalled"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			nodeOutageUnderTraffic(t, mode)
		})
	}
}

// nodeOutageUnderTraffic is TestNodeOutageUnderTraffic with the data node killed
// or stalled (mode).
func nodeOutageUnderTraffic(t *testing.T, mode string) {
	srv := startKillableMariaDB(t, "herald_outage")
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("calm", 2) // before the data node exists: node 1 only
	var node struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/nodes", map[string]any{"name": "data-x", "dsn": srv.dsn(), "weight": 100, "state": "read-write"}, 201), &node))
	nodeID := strconv.FormatInt(node.ID, 10)
	var topic struct {
		Queues []struct {
			ID   int64 `json:"id"`
			Node int64 `json:"node"`
		} `json:"queues"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/topics", map[string]any{"name": "spread", "queues": 8}, 201), &topic))
	onNode := map[int64]int64{}
	perNode := map[int64]int{}
	for _, q := range topic.Queues {
		onNode[q.ID] = q.Node
		perNode[q.Node]++
	}
	// Equal weights balance the nodes' queue counts, calm's 2 on node 1 included.
	require.Equal(t, map[int64]int{1: 3, node.ID: 5}, perNode)
	keys := keysOnNodes(t, h, "spread", onNode)

	rSpread, rCalm, rEvents := heraldtest.NewReceiver(t), heraldtest.NewReceiver(t), heraldtest.NewReceiver(t)
	rSpread.SetSecret(h.CreateGroup(map[string]any{"name": "spread-g", "endpoint_url": rSpread.URL, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "spread"}}}))
	rCalm.SetSecret(h.CreateGroup(map[string]any{"name": "calm-g", "endpoint_url": rCalm.URL, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "calm"}}}))
	rEvents.SetSecret(h.CreateGroup(map[string]any{"name": "ops", "endpoint_url": rEvents.URL, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "herald.events"}}}))
	key := h.CreateAPIKey("spread", "calm")
	h.Publish(key, "calm", map[string]any{"body": "calm-1"})

	// Traffic: one keyless publish every 50 ms (a stand-in for a publisher's pace)
	// from its own goroutine, recorded, never retried.
	var mu sync.Mutex
	var sent []outagePublish
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			p := publishOnce(h.BaseURL, key, "spread", fmt.Sprintf(`{"messages":[{"body":{"n":%d}}]}`, i))
			mu.Lock()
			sent = append(sent, p)
			mu.Unlock()
		}
	}()
	defer func() {
		select {
		case <-done:
		default:
			close(stop)
			<-done
		}
	}()
	time.Sleep(time.Second) // traffic on both nodes before the kill (stands for a running system)

	if mode == "stalled" {
		srv.stall(t)
	} else {
		srv.kill(t)
	}
	killed := time.Now()
	t.Logf("data node %d %s", node.ID, mode)

	console := func(path string) string {
		code, body, _ := h.Do("GET", path, "", nil, "Cookie", "herald_session="+h.Token())
		require.Equal(t, 200, code, "%s: %s", path, body)
		return string(body)
	}
	// Every view answers 200 all along; the marks of the outage appear within the
	// first probe (about a second).
	views := func() (marked bool) {
		var list struct {
			Items []struct {
				Name   string `json:"name"`
				Queues []struct {
					Node             int64   `json:"node"`
					UnreachableSince *string `json:"unreachable_since"`
				} `json:"queues"`
			} `json:"items"`
		}
		require.NoError(t, json.Unmarshal(h.Admin("GET", "/topics", nil, 200), &list))
		unreachableQueues := 0
		for _, tp := range list.Items {
			for _, q := range tp.Queues {
				if q.UnreachableSince != nil {
					require.Equal(t, node.ID, q.Node, "only the dead node's queues are marked")
					unreachableQueues++
				}
			}
		}
		h.Admin("GET", "/topics/spread", nil, 200)
		var calm, spread struct {
			LagMessages      int64 `json:"lag_messages"`
			UnreachableNodes []struct {
				Node  int64   `json:"node"`
				State string  `json:"state"`
				Since *string `json:"since"`
			} `json:"unreachable_nodes"`
		}
		require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/calm-g/stats", nil, 200), &calm))
		require.Empty(t, calm.UnreachableNodes, "a group on node 1 only is unaffected")
		require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/spread-g/stats", nil, 200), &spread))
		var n struct {
			Health      string  `json:"health"`
			HealthSince *string `json:"health_since"`
		}
		require.NoError(t, json.Unmarshal(h.Admin("GET", "/nodes/"+nodeID, nil, 200), &n))
		overview := console("/console/")
		topicPage := console("/console/topics/spread")
		groupPage := console("/console/groups/spread-g")
		nodesPage := console("/console/nodes")
		console("/console/groups/calm-g")
		console("/console/topics")
		warn := "Db node " + nodeID + " unreachable since"
		return unreachableQueues == 5 && len(spread.UnreachableNodes) == 1 && spread.UnreachableNodes[0].Node == node.ID &&
			n.Health == "down" && n.HealthSince != nil &&
			strings.Contains(overview, warn) && strings.Contains(topicPage, warn) && strings.Contains(groupPage, warn) &&
			strings.Contains(nodesPage, `id="node-health-`+nodeID+`">down</span>`)
	}
	require.Eventually(t, views, 10*time.Second, 200*time.Millisecond, "every view marks the dead node")

	code, body, hdr := h.Do("POST", "/v1/topics/spread/messages", key, map[string]any{"messages": []any{map[string]any{"body": 1, "key": keys[node.ID]}}})
	requireProblem(t, code, body, hdr, 503, "queue-unavailable")
	require.NotEmpty(t, hdr.Get("Retry-After"))
	h.Publish(key, "spread", map[string]any{"body": "keyed on node 1", "key": keys[1]})

	for time.Since(killed) < 21*time.Second {
		require.True(t, views(), "the views keep marking the dead node")
		time.Sleep(time.Second) // pacing of the view checks, not a wait for a state
	}
	close(stop)
	<-done

	mu.Lock()
	var after, ok, before int
	var accepted []string
	for _, p := range sent {
		if p.code == 201 {
			accepted = append(accepted, p.id)
		} else {
			require.Equal(t, 503, p.code, "a publish failing for a dead node is retryable")
		}
		if p.at.Before(killed) {
			before++
			continue
		}
		if p.at.Sub(killed) >= 5*time.Second {
			after++
			if p.code == 201 {
				ok++
				require.Equal(t, int64(1), onNode[p.queue], "stored on a live node")
			}
		}
	}
	mu.Unlock()
	require.Positive(t, after)
	rate := float64(ok) / float64(after)
	t.Logf("node %s; keyless publishes: %d before, %d in the outage's first 5 s, %d after: %.2f %% succeeded after the first 5 s; %d answered 201 in all",
		mode, before, len(sent)-before-after, after, 100*rate, len(accepted))
	require.GreaterOrEqual(t, rate, 0.99, "keyless publishes route around the dead node")

	// The node returns: it reads up (a background probe), takes keyless messages
	// again, and everything stored is delivered.
	if mode == "stalled" {
		srv.resume(t)
	} else {
		srv.restart(t)
	}
	returned := time.Now()
	require.Eventually(t, func() bool {
		var n struct{ Health string }
		require.NoError(t, json.Unmarshal(h.Admin("GET", "/nodes/"+nodeID, nil, 200), &n))
		return n.Health == "up"
	}, 15*time.Second, 100*time.Millisecond, "the node reads up once it answers")
	require.Eventually(t, func() bool {
		for range 8 {
			p := publishOnce(h.BaseURL, key, "spread", `{"messages":[{"body":"back"}]}`)
			require.Equal(t, 201, p.code)
			accepted = append(accepted, p.id)
			if onNode[p.queue] == node.ID {
				return true
			}
		}
		return false
	}, 15*time.Second, 100*time.Millisecond, "keyless messages reach the returned node")
	// Every message answered 201 is delivered; one answered 503 may be too (its
	// outcome was unknown), so a count of deliveries proves nothing.
	rSpread.WaitIDs(accepted, 60*time.Second)
	t.Logf("all %d messages answered 201 delivered %s after the node returned", len(accepted), time.Since(returned).Round(time.Millisecond))
	rCalm.WaitCount(1, 10*time.Second)

	// One node.down and one node.up, from one process.
	require.Eventually(t, func() bool { return nodeEvents(t, rEvents, node.ID)["node.up"] == 1 }, 15*time.Second, 100*time.Millisecond)
	require.Equal(t, map[string]int{"node.down": 1, "node.up": 1}, nodeEvents(t, rEvents, node.ID))
}

// nodeEvents counts the node events about node that r received, by type.
func nodeEvents(t *testing.T, r *heraldtest.Receiver, node int64) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, d := range r.All() {
		var ev struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal(d.Body, &ev), string(d.Body))
		if strings.HasPrefix(ev.Type, "node.") && ev.Data["node"] == float64(node) {
			out[ev.Type]++
		}
	}
	return out
}

// publishOnce posts body to topic's publish endpoint on the loopback server and
// records the outcome; a transport error reads as status 0. Safe off the test's
// goroutine (no require).
func publishOnce(baseURL, key, topic, body string) outagePublish {
	p := outagePublish{at: time.Now()}
	req, err := http.NewRequest("POST", baseURL+"/v1/topics/"+topic+"/messages", bytes.NewReader([]byte(body)))
	if err != nil {
		return p
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return p
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p.code = resp.StatusCode
	var out struct{ Messages []heraldtest.Published }
	if p.code == 201 && json.Unmarshal(b, &out) == nil && len(out.Messages) == 1 {
		p.id, p.queue = out.Messages[0].ID, out.Messages[0].Queue
	}
	return p
}

// stall stops the server with SIGSTOP: its port still accepts connections, which
// are never answered (a stalled or dropped host). resume continues it; the test's
// end resumes it before stopping it.
func (s *killableMariaDB) stall(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGSTOP))
	t.Cleanup(func() { _ = s.cmd.Process.Signal(syscall.SIGCONT) })
}

// resume sends SIGCONT to a stalled server.
func (s *killableMariaDB) resume(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGCONT))
}
