package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
)

// flushDB is the Redis database only TestRedisFlushed uses, so flushing it cannot
// disturb tests running in parallel.
const flushDB = 9

// TestRedisFlushed empties Redis while delivery jobs, reports and heartbeats are in
// flight: every message must still be delivered (duplicates allowed, loss never).
func TestRedisFlushed(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, func(c *config.Config) { c.RedisDB = flushDB })
	rdb := redis.NewClient(&redis.Options{Addr: h.Cfg.RedisAddr, DB: flushDB})
	defer rdb.Close()
	h.CreateTopic("flush", 2)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(heraldtest.Delivery) int { time.Sleep(3 * time.Millisecond); return 204 } // latency: a slow receiver
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_in_flight": 4,
		"subscriptions": []map[string]any{{"topic": "flush"}}}))
	key := h.CreateAPIKey("flush")
	var ids []string
	for i := range 4 {
		msgs := make([]map[string]any, 100)
		for j := range msgs {
			msgs[j] = map[string]any{"body": map[string]string{"n": fmt.Sprint(i*100 + j)}}
		}
		for _, p := range h.Publish(key, "flush", msgs...) {
			ids = append(ids, p.ID)
		}
	}
	r.WaitCount(60, 30*time.Second)
	require.Less(t, r.Count(), len(ids), "the flush must happen mid-delivery")
	require.NoError(t, rdb.FlushDB(context.Background()).Err())
	t.Logf("flushed Redis after %d of %d deliveries", r.Count(), len(ids))

	r.WaitCount(len(ids), 60*time.Second)
	for _, id := range ids {
		require.NotEmpty(t, r.Get(id), "message %s lost", id)
	}
	require.Zero(t, r.Unverified())
}
