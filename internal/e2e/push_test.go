package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
)

// asynqProcessed is how many asynq tasks of h's delivery queue finished (asynq's
// total processed counter), 0 when none ever did.
func asynqProcessed(t *testing.T, rdb redis.UniversalClient, keys delivery.Keys) int64 {
	t.Helper()
	n, err := rdb.Get(context.Background(), "asynq:{"+keys.AsynqQueue()+"}:processed").Int64()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	require.NoError(t, err)
	return n
}

// waitWorkers waits until n workers are announced for pushed jobs and returns their ids.
func waitWorkers(t *testing.T, h *heraldtest.Herald, n int) []string {
	t.Helper()
	var ids []string
	require.Eventually(t, func() bool {
		all, err := h.Redis.HGetAll(context.Background(), delivery.Keys{Namespace: h.Cfg.Namespace}.Workers()).Result()
		require.NoError(t, err)
		ids = ids[:0]
		for id := range all {
			ids = append(ids, id)
		}
		return len(ids) == n
	}, 15*time.Second, 10*time.Millisecond, "workers announced: %v", ids)
	return ids
}

// publishSingles publishes n messages to topic, one per request, and returns their ids.
func publishSingles(t *testing.T, h *heraldtest.Herald, key, topic string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		ids = append(ids, h.Publish(key, topic, map[string]any{"body": map[string]int{"n": i}})[0].ID)
	}
	return ids
}

// TestPushedJobsDelivered: with the api and dispatcher in the test process and a
// `herald worker` process, single messages reach the endpoint through the push
// stream: every one once and verified, and no asynq task ever ran.
func TestPushedJobsDelivered(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, nil)
	h.CreateTopic("t", 2)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 1, "max_in_flight": 8,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	startWorkerProcess(t, h)
	waitWorkers(t, h, 1)
	ids := publishSingles(t, h, key, "t", 100)
	r.WaitCount(len(ids), 30*time.Second)
	for _, id := range ids {
		ds := r.Get(id)
		require.Len(t, ds, 1, id)
		require.True(t, ds[0].Verified)
	}
	require.Zero(t, asynqProcessed(t, h.Redis, delivery.Keys{Namespace: h.Cfg.Namespace}), "every job pushed, none through asynq")
}

// TestPushFallsBackToAsynq: a worker announced but not listening (its PUBLISH
// reaches no subscriber) and a `herald worker` that takes no pushes
// (HERALD_WORKER_PUSH_JOBS=false): every job goes through asynq, every message
// arrives once.
func TestPushFallsBackToAsynq(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, nil)
	keys := delivery.Keys{Namespace: h.Cfg.Namespace}
	require.NoError(t, h.Redis.HSet(context.Background(), keys.Workers(), "ghost", bus.WorkerEntry{Concurrency: 64, Seq: 1}.String()).Err())
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 1,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	startRoleProcess(t, h, "worker", "HERALD_WORKER_PUSH_JOBS=false")
	ids := publishSingles(t, h, key, "t", 30)
	r.WaitCount(len(ids), 30*time.Second)
	for _, id := range ids {
		require.Len(t, r.Get(id), 1, id)
	}
	require.Positive(t, asynqProcessed(t, h.Redis, keys), "the jobs went through asynq")
	waitWorkers(t, h, 1) // the ghost alone: the worker did not announce itself
}

// TestPushedWorkerKilled: a `herald worker` process holding pushed jobs, four POSTs
// open and more jobs queued, is killed -9. Its entry stops changing, the dispatcher
// re-dispatches every job it pushed there well before their deadline (set to 60 s
// here), a second worker delivers them, and only the messages whose POST was open
// at the kill arrive twice.
func TestPushedWorkerKilled(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, func(c *config.Config) {
		c.Dispatcher.JobDeadlineBase = 60 * time.Second // only the lapse of the worker's entry re-dispatches in time
	})
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	held := map[string]bool{}
	release := make(chan struct{})
	arrived := make(chan struct{}, 16)
	r.Respond = func(d heraldtest.Delivery) int {
		mu.Lock()
		first := len(held) < 4 && !held[d.ID]
		if first {
			held[d.ID] = true
		}
		mu.Unlock()
		if first {
			arrived <- struct{}{}
			<-release // open until the worker is dead; then counted as delivered
		}
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 1, "max_in_flight": 4, "timeout_ms": 2000,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	worker := startWorkerProcess(t, h)
	waitWorkers(t, h, 1)
	ids := publishSingles(t, h, key, "t", 40)
	for range 4 {
		select {
		case <-arrived:
		case <-time.After(15 * time.Second):
			t.Fatal("the first four POSTs did not arrive")
		}
	}
	require.NoError(t, worker.Process.Signal(syscall.SIGKILL))
	_ = worker.Wait()
	killed := time.Now()
	close(release)
	startWorkerProcess(t, h)
	r.WaitCount(len(ids), 45*time.Second)
	took := time.Since(killed)
	t.Logf("all %d delivered %v after the kill", len(ids), took.Round(time.Millisecond))
	require.Less(t, took, 30*time.Second, "re-dispatched by the lapse, not the 60 s deadline")
	for _, id := range ids {
		n := len(r.Get(id))
		require.GreaterOrEqual(t, n, 1, id)
		if n > 1 {
			require.True(t, held[id], "%s arrived %d times but its POST was not open at the kill", id, n)
		}
	}
}

// TestPushedWorkerStopsGracefully: two `herald worker` processes take pushed jobs
// from a slow endpoint; one gets SIGTERM mid-stream. It unsubscribes and removes
// its entry, finishes its open POSTs, returns the rest and exits 0; the other
// delivers everything, nothing twice.
func TestPushedWorkerStopsGracefully(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(heraldtest.Delivery) int { time.Sleep(100 * time.Millisecond); return 204 } // stands for a slow endpoint
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 1, "max_in_flight": 4,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	a := startWorkerProcess(t, h)
	before := waitWorkers(t, h, 1)
	startWorkerProcess(t, h)
	waitWorkers(t, h, 2)
	ids := publishSingles(t, h, key, "t", 80)
	r.WaitCount(10, 30*time.Second)
	require.NoError(t, a.Process.Signal(syscall.SIGTERM))
	stopped := make(chan error, 1)
	go func() { stopped <- a.Wait() }()
	select {
	case err := <-stopped:
		require.NoError(t, err, "the stopped worker exits 0")
	case <-time.After(15 * time.Second):
		t.Fatal("the worker did not stop within 15 s")
	}
	left := waitWorkers(t, h, 1)
	require.NotEqual(t, before[0], left[0], "the stopped worker removed its entry")
	r.WaitCount(len(ids), 60*time.Second)
	for _, id := range ids {
		require.Len(t, r.Get(id), 1, fmt.Sprintf("%s delivered once", id))
	}
}
