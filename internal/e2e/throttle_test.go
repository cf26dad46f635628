package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
)

type statsBody struct {
	Status              string  `json:"status"`
	PausedReason        string  `json:"paused_reason"`
	EffectiveRate       float64 `json:"effective_rate"`
	Breaker             string  `json:"breaker"`
	ConsecutiveFailures int     `json:"consecutive_failures"`
	RetryMessages       int64   `json:"retry_messages"`
	DeadLetters         int64   `json:"dead_letters_pending"`
}

func stats(t *testing.T, h *heraldtest.Herald, group string) statsBody {
	var s statsBody
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/"+group+"/stats", nil, 200), &s))
	return s
}

// headerReceiver wraps a Receiver to set response headers for scripted answers.
func withHeader(r *heraldtest.Receiver, key, value string) {
	r.Header = func(heraldtest.Delivery) http.Header { return http.Header{key: []string{value}} }
}

// TestThrottle429: 429 with Retry-After 2 returns the message without counting an
// attempt, pauses the group about 2 s and halves its effective rate.
func TestThrottle429(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	var times []time.Time
	var attempts []string
	inner := scripted(429)
	r.Respond = func(d heraldtest.Delivery) int {
		mu.Lock()
		times = append(times, time.Now())
		attempts = append(attempts, d.Header.Get("herald-attempt"))
		mu.Unlock()
		return inner(d)
	}
	withHeader(r, "Retry-After", "2")
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "rate_limit": 100, "subscriptions": []map[string]any{{"topic": "t"}}}))
	msg := h.Publish(h.CreateAPIKey("t"), "t", map[string]any{"body": 1})[0]
	r.WaitCount(1, 20*time.Second)
	mu.Lock()
	require.Len(t, times, 2)
	require.GreaterOrEqual(t, times[1].Sub(times[0]), 1900*time.Millisecond, "paused for Retry-After")
	require.Equal(t, []string{"1", "1"}, attempts, "a throttle counts no attempt")
	mu.Unlock()
	require.Eventually(t, func() bool {
		s := stats(t, h, "g")
		return s.EffectiveRate > 0 && s.EffectiveRate <= 50
	}, 5*time.Second, 50*time.Millisecond, "effective rate halved from 100")
	require.Empty(t, mustRetryCount(t, h))
	require.NotEmpty(t, r.Get(msg.ID))
}

func mustRetryCount(t *testing.T, h *heraldtest.Herald) []int {
	n, err := h.Store.RetryCount(t.Context(), 1)
	require.NoError(t, err)
	if n == 0 {
		return nil
	}
	return []int{int(n)}
}

// TestGone410: 410 pauses the group with a reason; the message is returned, not
// lost, and resume delivers it.
func TestGone410(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	r.Respond = scripted(410)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	msg := h.Publish(h.CreateAPIKey("t"), "t", map[string]any{"body": 1})[0]
	require.Eventually(t, func() bool { return stats(t, h, "g").Status == "paused" }, 10*time.Second, 50*time.Millisecond)
	require.Contains(t, stats(t, h, "g").PausedReason, "410")
	time.Sleep(500 * time.Millisecond) // proves the paused group sends nothing more
	require.Zero(t, r.Count())
	h.Admin("POST", "/groups/g/resume", nil, 200)
	r.WaitCount(1, 10*time.Second)
	require.NotEmpty(t, r.Get(msg.ID))
}

// TestBreaker: ten consecutive failures open the breaker; after the cool-down a
// probe succeeds, the breaker closes and the rate restarts slowly.
func TestBreaker(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	failing := true
	r.Respond = func(heraldtest.Delivery) int {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return 500
		}
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_attempts": 1, "max_in_flight": 1,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	for i := range 12 {
		h.Publish(key, "t", map[string]any{"body": i})
	}
	require.Eventually(t, func() bool { return stats(t, h, "g").Breaker == "open" }, 15*time.Second, 50*time.Millisecond)
	s := stats(t, h, "g")
	require.GreaterOrEqual(t, s.ConsecutiveFailures, 10)
	mu.Lock()
	failing = false
	mu.Unlock()
	later := h.Publish(key, "t", map[string]any{"body": "after"})[0]
	// The probe after the 5 s cool-down takes the head of the backlog (a message the
	// open breaker held back, or this one); after it closes the breaker the rest follows.
	require.Eventually(t, func() bool { return len(r.Get(later.ID)) > 0 }, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		s := stats(t, h, "g")
		return s.Breaker == "closed" && s.EffectiveRate > 0
	}, 5*time.Second, 50*time.Millisecond, "closed with a slow start")
}

// TestMaxInFlight: max_in_flight 4 over 8 queues never shows more than 4 POSTs open
// at the endpoint.
func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 8)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(heraldtest.Delivery) int { time.Sleep(10 * time.Millisecond); return 204 } // latency: a slow receiver
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_in_flight": 4, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	for i := range 16 {
		msgs := make([]map[string]any, 10)
		for j := range msgs {
			msgs[j] = map[string]any{"body": i*10 + j}
		}
		h.Publish(key, "t", msgs...)
	}
	r.WaitCount(160, 30*time.Second)
	require.LessOrEqual(t, r.MaxInFlight(), 4)
	require.GreaterOrEqual(t, r.MaxInFlight(), 2, "parallelism was used")
}

// TestRedirectNotFollowed: a 302 is a failure of class redirect, never followed.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	target := heraldtest.NewReceiver(t)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(heraldtest.Delivery) int { return 302 }
	withHeader(r, "Location", target.URL)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_attempts": 1, "subscriptions": []map[string]any{{"topic": "t"}}}))
	msg := h.Publish(h.CreateAPIKey("t"), "t", map[string]any{"body": 1})[0]
	as := attemptsOf(t, h, msg.Queue, msg.Offset, 1)
	require.Equal(t, "redirect", as[0].ErrorClass)
	require.Equal(t, 302, as[0].Status)
	require.Zero(t, target.Count())
}

// TestThrottledForeverAutoPauses: an endpoint answering 429 forever ends disabled
// with a reason after disable_after (throttle-only time counts), never silently stuck.
func TestThrottledForeverAutoPauses(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, func(c *config.Config) { c.Dispatcher.DisableAfter = 3 * time.Second })
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(heraldtest.Delivery) int { return 429 }
	withHeader(r, "Retry-After", "1")
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	h.Publish(h.CreateAPIKey("t"), "t", map[string]any{"body": 1})
	require.Eventually(t, func() bool { return stats(t, h, "g").Status == "disabled" }, 20*time.Second, 100*time.Millisecond)
	require.Contains(t, stats(t, h, "g").PausedReason, "auto-paused")
	require.Zero(t, r.Count())
	var n int
	require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(*) FROM audit_log WHERE action = 'group.disabled' AND subject = 'g'").Scan(&n))
	require.Equal(t, 1, n, "the state change is audited")
}

// TestThrottledMessageFailsAlone: an endpoint with per-tenant quotas answers 429
// (Retry-After 1) to every POST carrying one tenant's message. At batch size 10 the
// throttled batch is bisected until that message travels alone, so all 400 other
// messages arrive, its batch-mates included, well within 40 s; so they do at batch
// size 1 and in an ordered group (where the refused message holds its queue until
// it is a dead letter). After delivery.ThrottleLimit throttles in a row (the group's
// max_throttles, 4 here, plus one per halving) the message counts failed attempts
// (the retry schedule, then a dead letter; a retry job is not bisected, so
// max_throttles each).
func TestThrottledMessageFailsAlone(t *testing.T) {
	t.Parallel()
	const maxThrottles = 4
	for _, tc := range []struct {
		name    string
		batch   int
		ordered bool
	}{{"batch1", 1, false}, {"batch10", 10, false}, {"ordered", 1, true}} {
		batch := tc.batch
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := heraldtest.StartHerald(t, nil)
			h.CreateTopic("t", 4)
			r := heraldtest.NewReceiver(t)
			poison := []byte(`"tenant":"over-quota"`)
			var mu sync.Mutex
			throttled := 0
			r.Respond = func(d heraldtest.Delivery) int {
				if bytes.Contains(d.Body, poison) {
					mu.Lock()
					throttled++
					mu.Unlock()
					return 429
				}
				return 204
			}
			withHeader(r, "Retry-After", "1")
			r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": batch, "ordered": tc.ordered,
				"max_attempts": 2, "retry_schedule": []int{1}, "max_throttles": maxThrottles, "subscriptions": []map[string]any{{"topic": "t"}}}))
			key := h.CreateAPIKey("t")
			bad := h.Publish(key, "t", map[string]any{"body": map[string]any{"tenant": "over-quota"}})[0]
			start := time.Now()
			const others = 400
			var ids []string
			for i := range others / 50 {
				msgs := make([]map[string]any, 50)
				for j := range msgs {
					msgs[j] = map[string]any{"body": map[string]any{"tenant": "fine", "n": i*50 + j}}
				}
				for _, p := range h.Publish(key, "t", msgs...) {
					ids = append(ids, p.ID)
				}
			}
			want := others // the throttled message's batch-mates too
			delivered := func() int {
				n := 0
				for _, id := range ids {
					if len(r.Get(id)) > 0 {
						n++
					}
				}
				if batch > 1 {
					n = 0
					for _, d := range r.All() {
						n += bytes.Count(d.Body, []byte(`"tenant":"fine"`))
					}
				}
				return n
			}
			require.Eventually(t, func() bool { return delivered() >= want }, 40*time.Second, 20*time.Millisecond,
				"%d of %d other messages delivered in 40 s", delivered(), others)
			t.Logf("%s: %d of %d other messages in %v", tc.name, delivered(), others, time.Since(start).Round(100*time.Millisecond))
			var dl struct {
				Items []struct {
					MessageID string `json:"message_id"`
					Attempts  int    `json:"attempts"`
					LastError string `json:"last_error"`
				} `json:"items"`
			}
			require.Eventually(t, func() bool {
				require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/g/dead-letters", nil, 200), &dl))
				for _, it := range dl.Items {
					if it.MessageID == bad.ID {
						return true
					}
				}
				return false
			}, 30*time.Second, 100*time.Millisecond, "the always-throttled message becomes a dead letter after its attempts")
			for _, it := range dl.Items {
				if it.MessageID == bad.ID {
					require.Equal(t, 2, it.Attempts)
					require.Contains(t, it.LastError, "429")
				}
			}
			mu.Lock()
			// The first attempt is ThrottleLimit throttled POSTs (max_throttles where
			// nothing is bisected), the retry max_throttles; a job re-dispatched on a
			// loaded machine may repeat one POST.
			first := maxThrottles
			if !tc.ordered {
				first = delivery.ThrottleLimit(maxThrottles, batch)
			}
			require.GreaterOrEqual(t, throttled, first+maxThrottles)
			require.LessOrEqual(t, throttled, first+maxThrottles+2)
			mu.Unlock()
		})
	}
}
