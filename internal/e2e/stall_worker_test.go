package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/bus"
)

// TestStalledWorkerSendsNothingSentElsewhere stops one of two worker processes
// (SIGSTOP: a VM freeze or a long pause) for 10 s while it runs pushed jobs: the
// dispatcher counts it dead and sends what the jobs had not reported to the other
// worker. Each POST's outcome was reported before the next POST started, and once
// the worker runs again its lease on those jobs has lapsed (bus.Lapsed), so it
// sends none of them again; a POST open at the stop that timed out meanwhile writes
// no retry row. Repeats are at most its POSTs in flight at the stop (its
// concurrency, 2), each once; every message arrives.
func TestStalledWorkerSendsNothingSentElsewhere(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, nil)
	h.CreateTopic("stall", 2)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(heraldtest.Delivery) int {
		time.Sleep(100 * time.Millisecond) // stands for a receiver's work, so jobs wait at the workers
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_in_flight": 8, "timeout_ms": 2000,
		"subscriptions": []map[string]any{{"topic": "stall"}}}))
	key := h.CreateAPIKey("stall")
	const concurrency = 2
	stalled := startRoleProcess(t, h, "worker", fmt.Sprintf("HERALD_WORKER_CONCURRENCY=%d", concurrency))
	startRoleProcess(t, h, "worker", fmt.Sprintf("HERALD_WORKER_CONCURRENCY=%d", concurrency))
	time.Sleep(2 * bus.WorkerRefresh) // stands for the dispatcher reading both workers' entries

	const n = 200
	for i := 0; i < n; i += 20 {
		msgs := make([]map[string]any, 20)
		for k := range msgs {
			msgs[k] = map[string]any{"body": map[string]int{"n": i + k}}
		}
		h.Publish(key, "stall", msgs...)
	}
	r.WaitCount(10, 30*time.Second)
	require.NoError(t, stalled.Process.Signal(syscall.SIGSTOP))
	time.Sleep(10 * time.Second) // stands for the stall
	require.NoError(t, stalled.Process.Signal(syscall.SIGCONT))
	r.WaitCount(n, 60*time.Second)
	time.Sleep(2 * time.Second) // stands for what the resumed worker could still send
	repeated, repeats := 0, 0
	for id := range r.All() {
		if ds := r.Get(id); len(ds) > 1 {
			repeated++
			repeats += len(ds) - 1
		}
	}
	t.Logf("%d messages repeated (%d repeats) of %d", repeated, repeats, n)
	require.LessOrEqual(t, repeats, concurrency, "only the stalled worker's POSTs in flight may arrive again, once")
}
