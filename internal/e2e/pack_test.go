package e2e

import (
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
)

// TestLostPackRedispatched: one publish to a topic two groups subscribe to makes
// two jobs in one dispatcher step, which travel to a `herald worker` process as one
// asynq task. The worker is killed -9 while both POSTs are open, leaving the task
// active forever; each job must be re-dispatched on its own as generation 1 once its
// deadline passes, and each group must receive its message again under the same
// webhook-id, body intact.
func TestLostPackRedispatched(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, nil)
	h.CreateTopic("pack", 1)
	var held atomic.Int32
	arrived, release := make(chan struct{}, 2), make(chan struct{})
	recv := make([]*heraldtest.Receiver, 2)
	for i := range recv {
		r := heraldtest.NewReceiver(t)
		var first atomic.Bool
		first.Store(true)
		r.Respond = func(heraldtest.Delivery) int {
			if first.Swap(false) {
				held.Add(1)
				arrived <- struct{}{}
				<-release // hold the POST open until the worker is dead
				return 500
			}
			return 204
		}
		r.SetSecret(h.CreateGroup(map[string]any{"name": "g" + string(rune('a'+i)), "endpoint_url": r.URL, "timeout_ms": 2000,
			"subscriptions": []map[string]any{{"topic": "pack"}}}))
		recv[i] = r
	}
	key := h.CreateAPIKey("pack")
	for i := range recv {
		// Both cursors claimed before the publish, so one step cuts both jobs (a
		// group adopted after the publish's notification would be cut alone).
		groupOwner(t, h, "g"+string(rune('a'+i)))
	}

	worker := startRoleProcess(t, h, "worker", "HERALD_WORKER_PUSH_JOBS=false") // asynq alone: pushed jobs have TestPushedWorkerKilled
	msg := h.Publish(key, "pack", map[string]any{"body": map[string]string{"hello": "pack"}})[0]
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(15 * time.Second):
			t.Fatalf("%d of the 2 first POSTs arrived", held.Load())
		}
	}
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: h.Cfg.RedisAddr})
	defer insp.Close()
	active, err := insp.ListActiveTasks(delivery.Keys{Namespace: h.Cfg.Namespace}.AsynqQueue())
	require.NoError(t, err)
	var activeIDs []string
	for _, a := range active {
		activeIDs = append(activeIDs, a.ID)
	}
	require.Len(t, active, 1, "both jobs in one task: %v", activeIDs)
	require.Equal(t, bus.TypeDeliverPack, active[0].Type)
	require.True(t, strings.HasPrefix(active[0].ID, "pk:") && strings.HasSuffix(active[0].ID, ":g0+2"), active[0].ID)

	require.NoError(t, worker.Process.Signal(syscall.SIGKILL))
	_ = worker.Wait()
	close(release)

	h.Start(app.Roles{Worker: true}) // a fresh worker
	for i, r := range recv {
		r.WaitCount(1, 60*time.Second)
		ds := r.Get(msg.ID)
		require.Len(t, ds, 1, "group %d", i)
		require.True(t, ds[0].Verified)
		require.JSONEq(t, `{"hello":"pack"}`, string(ds[0].Body))
	}
}
