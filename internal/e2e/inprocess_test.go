package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
)

// TestDeliveryPaths runs one live flow — concurrent single-message publishes while
// deliveries flow — both ways a `herald all` can pass work between its roles: in
// process (the default: notifications with bodies, jobs and reports in memory) and
// through Redis (HERALD_IN_PROCESS=false, as separate api, dispatcher and worker
// processes do). Either way every message arrives once, verified, with its body,
// and no job goes through asynq: the Redis path pushes jobs to the worker's channel.
func TestDeliveryPaths(t *testing.T) {
	t.Parallel()
	for _, inProcess := range []bool{true, false} {
		t.Run(fmt.Sprintf("in_process=%v", inProcess), func(t *testing.T) {
			t.Parallel()
			h := heraldtest.StartHerald(t, func(c *config.Config) { c.InProcess = &inProcess })
			h.CreateTopic("paths", 4)
			recv := heraldtest.NewReceiver(t)
			recv.SetSecret(h.CreateGroup(map[string]any{"name": "paths", "endpoint_url": recv.URL,
				"subscriptions": []map[string]any{{"topic": "paths"}}, "batch_size": 1, "max_in_flight": 16}))
			key := h.CreateAPIKey("paths")

			const publishers, each = 8, 25
			var mu sync.Mutex
			bodies := map[string]string{}
			var wg sync.WaitGroup
			for p := range publishers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						body := fmt.Sprintf(`{"publisher":%d,"n":%d}`, p, i)
						msg := h.Publish(key, "paths", map[string]any{"body": json.RawMessage(body)})[0]
						mu.Lock()
						bodies[msg.ID] = body
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			recv.WaitCount(publishers*each, 30*time.Second)
			for id, body := range bodies {
				got := recv.Get(id)
				require.Len(t, got, 1, "message %s delivered once", id)
				require.True(t, got[0].Verified, "message %s signed", id)
				require.Equal(t, body, string(got[0].Body), "message %s body, byte for byte", id)
			}
			require.Zero(t, recv.Unverified())

			ins := asynq.NewInspector(asynq.RedisClientOpt{Addr: heraldtest.RedisAddr()})
			defer ins.Close()
			processed := 0
			if qi, err := ins.GetQueueInfo(delivery.Keys{Namespace: h.Cfg.Namespace}.AsynqQueue()); err == nil {
				processed = qi.ProcessedTotal
			}
			if inProcess {
				require.Zero(t, processed, "in process, jobs never go through asynq while local slots are free")
			} else {
				require.Zero(t, processed, "through Redis, jobs are pushed to the worker while it has room")
			}
		})
	}
}

// TestInProcessRefusedForSplitRoles: HERALD_IN_PROCESS set on a process whose
// roles cannot pass work in memory (a worker alone) is refused with a clear error,
// not silently ignored.
func TestInProcessRefusedForSplitRoles(t *testing.T) {
	t.Parallel()
	dsn, _ := heraldtest.Database(t)
	_, ns := heraldtest.Redis(t)
	cfg := heraldtest.TestConfig(dsn, ns)
	on := true
	cfg.InProcess = &on
	_, err := app.Open(context.Background(), cfg, app.Roles{Worker: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.ErrorContains(t, err, "HERALD_IN_PROCESS applies only where one process runs the dispatcher")
}

// TestInProcessRefusesRedisWorkerSettings: a `herald all` whose worker takes its
// jobs in memory refuses to start with a setting only a worker taking them over
// Redis reads, naming it, rather than let it do nothing.
func TestInProcessRefusesRedisWorkerSettings(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	cmd := exec.Command(heraldBin, "all")
	cmd.Env = append(append(os.Environ(), h.Env()...), "HERALD_HTTP_ADDR=127.0.0.1:0", "HERALD_WORKER_PUSH_JOBS=false", "HERALD_WORKER_HEARTBEAT_TTL=5s")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "herald all started: %s", out)
	require.Contains(t, string(out), "HERALD_WORKER_HEARTBEAT_TTL, HERALD_WORKER_PUSH_JOBS tune a worker that takes its jobs over Redis")
}

// TestHeraldAllRestart stops a `herald all` process (SIGTERM) three times while
// single messages are published and delivered to a slow endpoint, starting the next
// one after it exited: jobs run in process, and the stopping process lets its local
// POSTs finish and applies their reports before it commits, so its successor sends
// none of them again — every message is POSTed exactly once.
func TestHeraldAllRestart(t *testing.T) {
	t.Parallel()
	heraldAllRestarts(t, syscall.SIGTERM, 0)
}

// TestHeraldAllKilled is TestHeraldAllRestart with kill -9: nothing accepted is
// lost, and what is sent again is bounded by each crash's open POSTs (8) plus what
// was reported since the last commit (a 100 ms window, ≈ 5 POSTs here; 8 allowed
// for a loaded machine).
func TestHeraldAllKilled(t *testing.T) {
	t.Parallel()
	heraldAllRestarts(t, syscall.SIGKILL, 3*(8+8))
}

func heraldAllRestarts(t *testing.T, sig syscall.Signal, maxDup int) {
	const n = 200
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("allroll", 2)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	posts := map[string]int{}
	r.Respond = func(d heraldtest.Delivery) int {
		mu.Lock()
		posts[d.ID]++
		mu.Unlock()
		time.Sleep(150 * time.Millisecond) // latency: a slow receiver
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "timeout_ms": 2000, "max_in_flight": 8, "batch_size": 1,
		"subscriptions": []map[string]any{{"topic": "allroll"}}}))
	key := h.CreateAPIKey("allroll")
	start := func() *exec.Cmd { return startRoleProcess(t, h, "all", "HERALD_HTTP_ADDR=127.0.0.1:0") }
	proc := start()

	var pub []heraldtest.Published
	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := range n {
			m := h.Publish(key, "allroll", map[string]any{"body": i})
			mu.Lock()
			pub = append(pub, m...)
			mu.Unlock()
			time.Sleep(15 * time.Millisecond) // latency: the publisher's pace
		}
	}()
	sent := func() int { mu.Lock(); defer mu.Unlock(); return len(posts) }
	for stop := range 3 {
		before := sent()
		require.Eventually(t, func() bool { s := sent(); return s >= before+8 || s >= n }, 20*time.Second, 5*time.Millisecond,
			"stop %d: no POSTs before it", stop)
		require.NoError(t, proc.Process.Signal(sig))
		err := proc.Wait()
		if sig == syscall.SIGTERM {
			require.NoError(t, err, "stop %d", stop)
		}
		proc = start()
	}
	<-published
	r.WaitCount(n, 60*time.Second)
	time.Sleep(500 * time.Millisecond) // proves no duplicate follows: nothing signals an absence
	mu.Lock()
	defer mu.Unlock()
	dup := 0
	for _, m := range pub {
		require.GreaterOrEqual(t, posts[m.ID], 1, "message %s delivered", m.ID)
		if posts[m.ID] > 1 {
			dup++
			t.Logf("%s POSTed %d times", m.ID, posts[m.ID])
		}
	}
	t.Logf("%d of %d messages POSTed more than once after 3 × %s", dup, n, sig)
	require.LessOrEqual(t, dup, maxDup, "messages sent again after 3 × %s", sig)
}
