package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/models/store"
)

// TestIsolation: group X's endpoint hangs until its timeout; group Y on the same
// topic keeps its latency.
func TestIsolation(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 2)
	slow, fast := heraldtest.NewReceiver(t), heraldtest.NewReceiver(t)
	slow.Respond = func(heraldtest.Delivery) int { time.Sleep(3 * time.Second); return 204 } // latency: a slow receiver
	slow.SetSecret(h.CreateGroup(map[string]any{"name": "x", "endpoint_url": slow.URL, "timeout_ms": 2000, "subscriptions": []map[string]any{{"topic": "t"}}}))
	fast.SetSecret(h.CreateGroup(map[string]any{"name": "y", "endpoint_url": fast.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	var worst time.Duration
	for i := range 40 {
		start := time.Now()
		m := h.Publish(key, "t", map[string]any{"body": i})[0]
		require.Eventually(t, func() bool { return len(fast.Get(m.ID)) > 0 }, 5*time.Second, time.Millisecond)
		worst = max(worst, time.Since(start))
		time.Sleep(25 * time.Millisecond) // paces publishes, so each one is timed alone
	}
	require.Less(t, worst, time.Second, "group y waited behind group x")
}

// TestRateLimitAcrossWorkers: rate_limit 200 msg/s with 3 worker processes gives a
// measured rate within ±10 % of 200 over 10 s.
func TestRateLimitAcrossWorkers(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	startWorkerProcess(t, h)
	startWorkerProcess(t, h)
	h.CreateTopic("t", 4)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "rate_limit": 200, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	for range 8 {
		msgs := make([]map[string]any, 400)
		for j := range msgs {
			msgs[j] = map[string]any{"body": j}
		}
		h.Publish(key, "t", msgs...)
	}
	time.Sleep(2 * time.Second) // past the first second's burst
	before := r.Count()
	time.Sleep(10 * time.Second) // the measured window
	rate := float64(r.Count()-before) / 10
	require.InDelta(t, 200, rate, 20, "measured %.1f msg/s", rate)
}

// TestChaos: 10,000 messages to an endpoint failing 30 % of POSTs at random with
// random latency, the worker killed twice and Redis flushed once: every message is
// delivered or dead-lettered; none is lost.
//
// It runs alone (not t.Parallel): with -race it needs the CPU for its ~14,000 POSTs.
func TestChaos(t *testing.T) {
	const chaosDB = 10 // a Redis database of its own: flushing it disturbs no other test
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, func(c *config.Config) { c.RedisDB = chaosDB })
	rdb := redis.NewClient(&redis.Options{Addr: h.Cfg.RedisAddr, DB: chaosDB})
	defer rdb.Close()
	h.CreateTopic("chaos", 4)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	r.Respond = func(heraldtest.Delivery) int {
		mu.Lock()
		fail, sleep := rng.Float64() < 0.3, time.Duration(rng.IntN(5))*time.Millisecond
		mu.Unlock()
		time.Sleep(sleep) // latency: a receiver of 0–4 ms
		if fail {
			return 500
		}
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_in_flight": 32, "max_attempts": 4, "retry_schedule": []int{1}, "timeout_ms": 1000,
		"subscriptions": []map[string]any{{"topic": "chaos"}}}))
	key := h.CreateAPIKey("chaos")
	var ids []string
	for i := range 20 {
		msgs := make([]map[string]any, 500)
		for j := range msgs {
			msgs[j] = map[string]any{"body": i*500 + j}
		}
		for _, p := range h.Publish(key, "chaos", msgs...) {
			ids = append(ids, p.ID)
		}
	}
	w := startWorkerProcess(t, h)
	r.WaitCount(1500, 120*time.Second)
	require.NoError(t, w.Process.Signal(syscall.SIGKILL))
	_ = w.Wait()
	w = startWorkerProcess(t, h)
	r.WaitCount(4000, 120*time.Second)
	require.NoError(t, rdb.FlushDB(context.Background()).Err())
	r.WaitCount(6000, 120*time.Second)
	require.NoError(t, w.Process.Signal(syscall.SIGKILL))
	_ = w.Wait()
	h.Start(app.Roles{Worker: true})

	dead := func() map[string]bool {
		out := map[string]bool{}
		ds, err := h.Store.DeadLetterList(t.Context(), store.DeadLetterFilter{GroupID: 1}, 0, 20000)
		require.NoError(t, err)
		for _, d := range ds {
			out[fmt.Sprintf("msg_%d_%d", d.QueueID, d.Offset)] = true
		}
		return out
	}
	require.Eventually(t, func() bool {
		got, dl := r.All(), dead()
		for _, id := range ids {
			if _, ok := got[id]; !ok && !dl[id] {
				return false
			}
		}
		return true
	}, 300*time.Second, 500*time.Millisecond, "every message delivered or dead-lettered")
	t.Logf("delivered %d, dead letters %d, of %d", r.Count(), len(dead()), len(ids))
}
