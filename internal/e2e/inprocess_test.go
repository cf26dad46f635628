package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/testinfra"
)

// TestDeliveryPaths runs one live flow — concurrent single-message publishes while
// deliveries flow — both ways a `herald all` can pass work between its roles: in
// process (the default: notifications with bodies, jobs and reports in memory) and
// through Redis (HERALD_IN_PROCESS=false, as separate api, dispatcher and worker
// processes do). Either way every message arrives once, verified, with its body;
// only the Redis path runs jobs through asynq.
func TestDeliveryPaths(t *testing.T) {
	t.Parallel()
	for _, inProcess := range []bool{true, false} {
		t.Run(fmt.Sprintf("in_process=%v", inProcess), func(t *testing.T) {
			t.Parallel()
			h := testinfra.StartHerald(t, func(c *config.Config) { c.InProcess = &inProcess })
			h.CreateTopic("paths", 4)
			recv := testinfra.NewReceiver(t)
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

			ins := asynq.NewInspector(asynq.RedisClientOpt{Addr: testinfra.RedisAddr()})
			defer ins.Close()
			processed := 0
			if qi, err := ins.GetQueueInfo(delivery.Keys{Namespace: h.Cfg.Namespace}.AsynqQueue()); err == nil {
				processed = qi.ProcessedTotal
			}
			if inProcess {
				require.Zero(t, processed, "in process, jobs never go through asynq while local slots are free")
			} else {
				require.Positive(t, processed, "through Redis, jobs go through asynq")
			}
		})
	}
}

// TestInProcessRefusedForSplitRoles: HERALD_IN_PROCESS set on a process whose
// roles cannot pass work in memory (a worker alone) is refused with a clear error,
// not silently ignored.
func TestInProcessRefusedForSplitRoles(t *testing.T) {
	t.Parallel()
	dsn, _ := testinfra.Database(t)
	_, ns := testinfra.Redis(t)
	cfg := testinfra.TestConfig(dsn, ns)
	on := true
	cfg.InProcess = &on
	_, err := app.Open(context.Background(), cfg, app.Roles{Worker: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.ErrorContains(t, err, "HERALD_IN_PROCESS applies only where one process runs the dispatcher")
}
