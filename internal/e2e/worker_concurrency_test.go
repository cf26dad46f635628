package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
)

// TestWorkerConcurrencyBoundsOpenPosts runs three groups whose max_in_flight (16
// each) allows far more POSTs than one worker's HERALD_WORKER_CONCURRENCY (4)
// against 300 ms receivers: the POSTs open at once across the three endpoints never
// exceed 4, whichever carrier brought the jobs (in-process in `herald all`, pushed
// to a worker apart, or asynq), and every message is delivered.
func TestWorkerConcurrencyBoundsOpenPosts(t *testing.T) {
	t.Parallel()
	const concurrency, groups, perGroup = 4, 3, 24
	for _, tc := range []struct {
		name  string
		apart bool // the worker runs as a role of its own
		push  bool // HERALD_WORKER_PUSH_JOBS
	}{
		{name: "herald all", push: true},
		{name: "pushed", apart: true, push: true},
		{name: "asynq", apart: true, push: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mutate := func(c *config.Config) {
				c.Worker.Concurrency = concurrency
				c.Worker.PushJobs = tc.push
				c.Dispatcher.JobDeadlineBase = 30 * time.Second // jobs wait for slots; none is re-dispatched meanwhile
			}
			var h *heraldtest.Herald
			if tc.apart {
				h = heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true, Maintenance: true}, mutate)
				h.Start(app.Roles{Worker: true})
			} else {
				h = heraldtest.StartHerald(t, mutate)
			}
			h.CreateTopic("t", 4)
			var mu sync.Mutex
			open, most := 0, 0
			receivers := make([]*heraldtest.Receiver, groups)
			for i := range receivers {
				r := heraldtest.NewReceiver(t)
				r.Respond = func(heraldtest.Delivery) int {
					mu.Lock()
					open++
					most = max(most, open)
					mu.Unlock()
					time.Sleep(300 * time.Millisecond) // latency: a slow endpoint keeps POSTs open
					mu.Lock()
					open--
					mu.Unlock()
					return 204
				}
				r.SetSecret(h.CreateGroup(map[string]any{"name": fmt.Sprintf("g%d", i), "endpoint_url": r.URL, "max_in_flight": 16,
					"subscriptions": []map[string]any{{"topic": "t"}}}))
				receivers[i] = r
			}
			key := h.CreateAPIKey("t")
			msgs := make([]map[string]any, perGroup)
			for i := range msgs {
				msgs[i] = map[string]any{"body": i}
			}
			h.Publish(key, "t", msgs...)
			for _, r := range receivers {
				r.WaitCount(perGroup, 30*time.Second)
			}
			mu.Lock()
			defer mu.Unlock()
			require.LessOrEqual(t, most, concurrency, "POSTs open at once at a worker of concurrency %d", concurrency)
			require.Equal(t, concurrency, most, "the worker uses all its slots while 72 messages wait")
		})
	}
}
