package e2e

import (
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestWorkerGracefulStop sends SIGTERM to a `herald worker` process mid-job with a
// slow receiver. It must start no POST after the signal, let the POSTs in flight
// finish, report them, and exit within timeout_ms + 2 s; another worker then sends
// only the messages never sent, so every message is POSTed exactly once.
func TestWorkerGracefulStop(t *testing.T) {
	t.Parallel()
	const n, slow, timeoutMS = 40, 700 * time.Millisecond, 2000
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, nil)
	h.CreateTopic("stop", 1)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	posts := map[string]int{}
	var arrivals []time.Time
	started := make(chan struct{}, n)
	r.Respond = func(d heraldtest.Delivery) int {
		mu.Lock()
		posts[d.ID]++
		arrivals = append(arrivals, d.At)
		mu.Unlock()
		select {
		case started <- struct{}{}:
		default:
		}
		time.Sleep(slow) // latency: a slow receiver
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "timeout_ms": timeoutMS, "max_in_flight": 8,
		"subscriptions": []map[string]any{{"topic": "stop"}}}))
	msgs := make([]map[string]any, n)
	for i := range msgs {
		msgs[i] = map[string]any{"body": i}
	}
	worker := startWorkerProcess(t, h)
	pub := h.Publish(h.CreateAPIKey("stop"), "stop", msgs...)

	select {
	case <-started:
	case <-time.After(15 * time.Second):
		t.Fatal("no POST arrived")
	}
	time.Sleep(slow / 2) // places SIGTERM in the middle of the open POST
	sigterm := time.Now()
	require.NoError(t, worker.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- worker.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err)
	case <-time.After(timeoutMS*time.Millisecond + 2*time.Second):
		_ = worker.Process.Kill()
		err := <-exited
		t.Fatalf("worker still running %v after SIGTERM (killed: %v)", time.Since(sigterm), err)
	}
	took := time.Since(sigterm)

	mu.Lock()
	late := 0
	for _, at := range arrivals {
		if at.After(sigterm.Add(100 * time.Millisecond)) {
			late++
		}
	}
	before := len(arrivals)
	mu.Unlock()
	require.Zero(t, late, "POSTs started after SIGTERM")
	t.Logf("worker exited %v after SIGTERM; %d of %d messages were sent before it", took, before, n)

	h.Start(app.Roles{Worker: true})
	r.WaitCount(n, 20*time.Second)
	time.Sleep(500 * time.Millisecond) // proves no duplicate follows: nothing signals an absence
	mu.Lock()
	defer mu.Unlock()
	for _, m := range pub {
		require.Equal(t, 1, posts[m.ID], "POSTs of %s", m.ID)
	}
}

// TestWorkerRollingRestart restarts two worker processes one after the other, twice,
// while a backlog drains through a slow receiver: graceful stops lose no answer, so
// every message is POSTed exactly once.
func TestWorkerRollingRestart(t *testing.T) {
	t.Parallel()
	const n, timeoutMS = 200, 2000
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, nil)
	h.CreateTopic("roll", 1)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	posts := map[string]int{}
	r.Respond = func(d heraldtest.Delivery) int {
		mu.Lock()
		posts[d.ID]++
		mu.Unlock()
		time.Sleep(300 * time.Millisecond) // latency: a slow receiver
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "timeout_ms": timeoutMS, "max_in_flight": 8,
		"subscriptions": []map[string]any{{"topic": "roll"}}}))
	key := h.CreateAPIKey("roll")
	workers := []*exec.Cmd{startWorkerProcess(t, h), startWorkerProcess(t, h)}
	var pub []heraldtest.Published
	for range n / 100 {
		msgs := make([]map[string]any, 100)
		for i := range msgs {
			msgs[i] = map[string]any{"body": i}
		}
		pub = append(pub, h.Publish(key, "roll", msgs...)...)
	}
	sent := func() int { mu.Lock(); defer mu.Unlock(); return len(posts) }
	restarts := 0
	for round := range 2 {
		for i := range workers {
			// Each stop lands under load: a few POSTs have started since the last restart.
			before := sent()
			require.Eventually(t, func() bool { s := sent(); return s >= before+4 || s >= n }, 10*time.Second, 5*time.Millisecond,
				"round %d worker %d: no POSTs before the stop", round, i)
			stop := time.Now()
			require.NoError(t, workers[i].Process.Signal(syscall.SIGTERM))
			require.NoError(t, workers[i].Wait(), "round %d worker %d", round, i)
			require.Less(t, time.Since(stop), timeoutMS*time.Millisecond+2*time.Second, "round %d worker %d stop", round, i)
			workers[i] = startWorkerProcess(t, h)
			restarts++
		}
	}
	mu.Lock()
	during := len(posts)
	mu.Unlock()
	t.Logf("%d restarts while %d of %d messages were sent", restarts, during, n)
	r.WaitCount(n, 30*time.Second)
	time.Sleep(500 * time.Millisecond) // proves no duplicate follows: nothing signals an absence
	mu.Lock()
	defer mu.Unlock()
	for _, m := range pub {
		require.Equal(t, 1, posts[m.ID], "POSTs of %s", m.ID)
	}
	require.Less(t, during, n, "the restarts happened under load")
}
