package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestResetKeepsMaxInFlight resets a group to earliest while max_in_flight (4)
// POSTs are open at a slow receiver: the jobs of the dropped cursor version keep
// their credits until their POSTs end, so the new version's POSTs never open beside
// them past the limit, and every message still arrives.
func TestResetKeepsMaxInFlight(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 1)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(heraldtest.Delivery) int {
		time.Sleep(400 * time.Millisecond) // stands for a slow receiver, so POSTs are open at the reset
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_in_flight": 4, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "orders"}}}))
	key := h.CreateAPIKey("orders")
	const n = 40
	msgs := make([]map[string]any, n)
	for i := range msgs {
		msgs[i] = map[string]any{"body": map[string]int{"n": i}}
	}
	h.Publish(key, "orders", msgs...)
	require.Eventually(t, func() bool { return r.InFlight() == 4 }, 15*time.Second, time.Millisecond, "four POSTs open")
	h.Admin("POST", "/groups/g/offsets/reset", map[string]any{"to": "earliest"}, 200)
	r.WaitCount(n, 60*time.Second)
	require.LessOrEqual(t, r.MaxInFlight(), 4, "POSTs open at once, across the reset")
}
