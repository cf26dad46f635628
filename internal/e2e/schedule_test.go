package e2e

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
)

// keysForQueues returns one message key per queue position of a topic with n queues
// (slot = fnv32a(key) % KeySlots, position = slot % n).
func keysForQueues(n int) []string {
	keys := make([]string, n)
	found := 0
	for i := 0; found < n; i++ {
		k := fmt.Sprintf("k%d", i)
		h := fnv.New32a()
		h.Write([]byte(k))
		pos := int(h.Sum32()%models.KeySlots) % n
		if keys[pos] == "" {
			keys[pos], found = k, found+1
		}
	}
	return keys
}

// queueOf returns the queue id in a webhook-id msg_<queue>_<offset>.
func queueOf(id string) string {
	parts := strings.Split(id, "_")
	if len(parts) != 3 {
		return ""
	}
	return parts[1]
}

// idOffset returns the offset in a webhook-id msg_<queue>_<offset>.
func idOffset(t *testing.T, id string) int64 {
	t.Helper()
	_, off, err := models.ParseMessageID(id)
	require.NoError(t, err, "webhook-id %q", id)
	return off
}

// hit is one request a receiver saw, whatever its answer.
type hit struct {
	id     string
	at     time.Time
	status int
}

// recordHits makes r answer with respond (by request number, from 0) and records
// every request.
func recordHits(r *heraldtest.Receiver, respond func(n int, d heraldtest.Delivery) int) func() []hit {
	var mu sync.Mutex
	var hits []hit
	r.Respond = func(d heraldtest.Delivery) int {
		mu.Lock()
		n := len(hits)
		hits = append(hits, hit{id: d.ID, at: d.At})
		mu.Unlock()
		st := respond(n, d)
		mu.Lock()
		hits[n].status = st
		mu.Unlock()
		return st
	}
	return func() []hit {
		mu.Lock()
		defer mu.Unlock()
		return append([]hit(nil), hits...)
	}
}

func publishN(t *testing.T, h *heraldtest.Herald, key, topic, msgKey string, n int) {
	t.Helper()
	for start := 0; start < n; start += 250 {
		msgs := make([]map[string]any, 0, 250)
		for i := start; i < min(n, start+250); i++ {
			m := map[string]any{"body": i}
			if msgKey != "" {
				m["key"] = msgKey
			}
			msgs = append(msgs, m)
		}
		h.Publish(key, topic, msgs...)
	}
}

// TestRateLimitSharedAcrossQueues: a rate-limited group with a backlog on each of its
// two queues sends from both at about half the rate each; no queue waits for the
// other to drain.
func TestRateLimitSharedAcrossQueues(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 2)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "rate_limit": 10, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	keys := keysForQueues(2)
	publishN(t, h, key, "t", keys[0], 60)
	publishN(t, h, key, "t", keys[1], 60)
	r.WaitCount(30, 15*time.Second)
	per := map[string]int{}
	for id := range r.All() {
		per[queueOf(id)]++
	}
	t.Logf("deliveries per queue: %v", per)
	require.Len(t, per, 2, "both queues delivered: %v", per)
	for q, n := range per {
		require.GreaterOrEqual(t, n, 10, "queue %s got %d of %v", q, n, per)
	}
}

// TestThrottledMessageFirstAfterPause: a message answered 429 with Retry-After 1 is
// sent again when the pause ends, before any newer message, not queued behind the
// backlog (README, "What your answer means": the messages it returned are the first
// sent when the pause ends; dispatcher/reports.go puts them back in offset order).
//
// The rule is the order in which the dispatcher cuts jobs. max_in_flight 1 makes the
// endpoint see POSTs in that order: with more, a job's POSTs run in parallel, so a
// message of the throttled job whose POST had not started is held and, being older,
// rightly goes first; and the job cut after the re-send may overtake it (the re-sent
// message is loaded from MySQL, the next one came with its notification).
func TestThrottledMessageFirstAfterPause(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	withHeader(r, "Retry-After", "1")
	hits := recordHits(r, func(n int, _ heraldtest.Delivery) int {
		if n == 20 {
			return 429
		}
		return 204
	})
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "rate_limit": 50, "max_in_flight": 1,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	publishN(t, h, h.CreateAPIKey("t"), "t", "", 250)
	require.Eventually(t, func() bool { return len(hits()) > 20 }, 15*time.Second, 5*time.Millisecond)
	throttled := hits()[20]
	again := func(hs []hit) int { // the index of its next POST, or -1
		for i := 21; i < len(hs); i++ {
			if hs[i].id == throttled.id {
				return i
			}
		}
		return -1
	}
	require.Eventually(t, func() bool { return again(hits()) > 0 }, 10*time.Second, 5*time.Millisecond, "%s sent again", throttled.id)
	hs := hits()
	i := again(hs)
	// Held messages of its job are newer and come after it; an older message may
	// still be backing off from an earlier return and go before it.
	for _, x := range hs[21:i] {
		require.Less(t, idOffset(t, x.id), idOffset(t, throttled.id),
			"%s was sent after the 429 and before %s went again: the throttled message goes before every newer one", x.id, throttled.id)
	}
	wait := hs[i].at.Sub(throttled.at)
	t.Logf("%s sent again after %v, POST %d after the 429", throttled.id, wait, i-20)
	require.Greater(t, wait, 900*time.Millisecond, "paused for Retry-After")
	require.Less(t, wait, 2*time.Second, "sent again at the end of the pause (Retry-After 1 s ± 1 s)")
	r.WaitCount(250, 20*time.Second)
}

// TestRateLimitNoBurst: at rate_limit 50 no second carries much more than 50
// messages, the first one included.
func TestRateLimitNoBurst(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	hits := recordHits(r, func(int, heraldtest.Delivery) int { return 204 })
	key := h.CreateAPIKey("t")
	publishN(t, h, key, "t", "", 200)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "rate_limit": 50, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	r.WaitCount(150, 15*time.Second)
	hs := hits()
	worst := 0
	for i, x := range hs {
		j := i
		for j < len(hs) && hs[j].at.Sub(x.at) < time.Second {
			j++
		}
		worst = max(worst, j-i)
	}
	t.Logf("busiest second: %d messages", worst)
	require.LessOrEqual(t, worst, 60, "messages in the busiest second at rate 50")
	require.GreaterOrEqual(t, worst, 40, "the rate is used")
}

// TestSlowStartAfterThrottle: after one 503 with Retry-After an unlimited group is
// back to full speed within seconds, not crawling at a few messages a second.
func TestSlowStartAfterThrottle(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	withHeader(r, "Retry-After", "1")
	hits := recordHits(r, func(n int, _ heraldtest.Delivery) int {
		if n == 100 {
			return 503
		}
		return 204
	})
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	publishN(t, h, h.CreateAPIKey("t"), "t", "", 2000)
	require.Eventually(t, func() bool { return len(hits()) > 100 }, 15*time.Second, 5*time.Millisecond)
	throttled := hits()[100].at
	r.WaitCount(2000, 20*time.Second)
	done := time.Since(throttled)
	t.Logf("1,900 messages after the 503 in %v", done)
	require.Less(t, done, 12*time.Second, "1,900 messages after a 1 s pause")
}

// TestLoneJobUsesWholeBudget: one 80-message job with nothing else waiting in the
// group opens max_in_flight POSTs, not half.
func TestLoneJobUsesWholeBudget(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(heraldtest.Delivery) int { time.Sleep(100 * time.Millisecond); return 204 } // latency: a slow receiver
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_in_flight": 8, "subscriptions": []map[string]any{{"topic": "t"}}}))
	publishN(t, h, h.CreateAPIKey("t"), "t", "", 80)
	r.WaitCount(80, 15*time.Second)
	require.Equal(t, 8, r.MaxInFlight())
}

// TestBreakerRecoversToConfiguredRate: after the breaker closes, a group with
// rate_limit 20 climbs back to 20 msg/s within seconds; the slow start's base is the
// configured rate, not the probe's trickle.
func TestBreakerRecoversToConfiguredRate(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	failing := true
	var closedAt time.Time
	hits := recordHits(r, func(_ int, _ heraldtest.Delivery) int {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return 500
		}
		if closedAt.IsZero() {
			closedAt = time.Now()
		}
		return 204
	})
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "rate_limit": 20, "max_attempts": 1,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	publishN(t, h, key, "t", "", 12)
	require.Eventually(t, func() bool { return stats(t, h, "g").Breaker == "open" }, 15*time.Second, 20*time.Millisecond)
	mu.Lock()
	failing = false
	mu.Unlock()
	publishN(t, h, key, "t", "", 300)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !closedAt.IsZero()
	}, 20*time.Second, 10*time.Millisecond, "the probe")
	time.Sleep(10 * time.Second) // the measured window: ten seconds of slow start after the probe
	mu.Lock()
	from := closedAt
	mu.Unlock()
	n := 0
	for _, x := range hits() {
		if x.status == 204 && !x.at.Before(from) && x.at.Before(from.Add(10*time.Second)) {
			n++
		}
	}
	t.Logf("%d messages in the 10 s after the breaker closed", n)
	// Slow start from 2 msg/s doubling every 2 s reaches 20 after about 7 s: about
	// 120 in the first 10 s (the old restart at 1 msg/s sent about 10).
	require.GreaterOrEqual(t, n, 70, "messages in the 10 s after the breaker closed")
	require.LessOrEqual(t, n, 10*20+20, "never above the configured rate")
}

// TestRetryJobsWithinMaxInFlight: retry rows of many queues claimed at once never
// open more POSTs than max_in_flight.
func TestRetryJobsWithinMaxInFlight(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 8)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(d heraldtest.Delivery) int {
		if d.Header.Get("herald-attempt") == "1" {
			var i int
			_, _ = fmt.Sscan(string(d.Body), &i)
			if i%3 == 0 {
				return 500
			}
			return 204
		}
		time.Sleep(300 * time.Millisecond) // latency: a slow receiver
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_in_flight": 4, "max_attempts": 3,
		"retry_schedule": []int{1}, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	keys := keysForQueues(8)
	for q, k := range keys {
		for i := 3 * q; i < 3*q+3; i++ {
			h.Publish(key, "t", map[string]any{"body": i, "key": k})
		}
	}
	// Hold the group until every retry row is due, so one claim spans all eight queues.
	r.WaitCount(16, 10*time.Second)
	h.Admin("POST", "/groups/g/pause", nil, 200)
	require.Eventually(t, func() bool {
		n, err := h.Store.RetryCount(t.Context(), 1)
		return err == nil && n == 8
	}, 10*time.Second, 20*time.Millisecond)
	waitRetriesDue(t, h, 8)
	h.Admin("POST", "/groups/g/resume", nil, 200)
	r.WaitCount(24, 15*time.Second)
	t.Logf("most POSTs open: %d", r.MaxInFlight())
	require.LessOrEqual(t, r.MaxInFlight(), 4, "open POSTs with max_in_flight 4")
	queues := map[string]bool{}
	for id := range r.All() {
		queues[queueOf(id)] = true
	}
	require.Len(t, queues, 8)
}

// TestRetriesShareTheRate: due retries of a rate-limited group are sent in turn with
// its backlog, not after it.
func TestRetriesShareTheRate(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(d heraldtest.Delivery) int {
		var q, off int
		_, _ = fmt.Sscanf(d.ID, "msg_%d_%d", &q, &off)
		if d.Header.Get("herald-attempt") == "1" && off <= 20 && off%2 == 0 {
			return 500 // ten of the first twenty, between successes (no breaker)
		}
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "rate_limit": 20, "max_attempts": 3,
		"retry_schedule": []int{1}, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	publishN(t, h, key, "t", "", 20)
	r.WaitCount(10, 10*time.Second)
	publishN(t, h, key, "t", "", 300) // 15 s of backlog at the rate
	retried := func() int {
		n := 0
		for _, d := range r.All() {
			if d.Header.Get("herald-attempt") == "2" {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return retried() >= 10 }, 12*time.Second, 20*time.Millisecond,
		"the ten retries go out while the backlog drains")
	require.Less(t, r.Count(), 20+300, "the backlog was still draining")
}

// lagOf returns a group's lag in messages and seconds from its stats.
func lagOf(t *testing.T, h *heraldtest.Herald, group string) (msgs int64, secs float64) {
	var s struct {
		LagMessages int64   `json:"lag_messages"`
		LagSeconds  float64 `json:"lag_seconds"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/"+group+"/stats", nil, 200), &s))
	return s.LagMessages, s.LagSeconds
}

// TestCommitMovesAroundSlowMessage: while one message's POST hangs, the cursor commits
// the messages delivered after it (listing the slow one), so lag shows what is
// really left instead of freezing at the slow message.
func TestCommitMovesAroundSlowMessage(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the servers stop
	r.Respond = func(d heraldtest.Delivery) int {
		if strings.HasSuffix(d.ID, "_3") {
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
		}
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	publishN(t, h, h.CreateAPIKey("t"), "t", "", 100)
	r.WaitCount(99, 10*time.Second)
	require.Eventually(t, func() bool { n, _ := lagOf(t, h, "g"); return n == 1 }, 5*time.Second, 50*time.Millisecond,
		"committed past the slow message, which stays listed")
	require.Eventually(t, func() bool { _, secs := lagOf(t, h, "g"); return secs > 1.0 }, 10*time.Second, 50*time.Millisecond,
		"lag age is the slow message's")
	unblock()
	r.WaitCount(100, 10*time.Second)
	require.Eventually(t, func() bool { n, _ := lagOf(t, h, "g"); return n == 0 }, 5*time.Second, 50*time.Millisecond)
}
