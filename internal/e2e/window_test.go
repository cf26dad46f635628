package e2e

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestWindowSharedByQueue: a group (max_in_flight 4, batch 10) draining 1,000
// messages of one queue to a receiver that answers after 400 ms; 50 messages then
// published to the group's other queue get their first POST within a second. The
// in-flight window is shared round-robin by queue: a job holds its credits until its
// last POST, so one queue's long jobs must not take the window whole while another
// waits.
func TestWindowSharedByQueue(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 2)
	keys := keysForQueues(2)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	lateBody := []byte(`"late":`)
	var lateFirst time.Time
	r.Respond = func(d heraldtest.Delivery) int {
		mu.Lock()
		if lateFirst.IsZero() && bytes.Contains(d.Body, lateBody) {
			lateFirst = d.At
		}
		mu.Unlock()
		time.Sleep(400 * time.Millisecond) // a slow receiver
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 10, "max_in_flight": 4,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	for range 10 {
		msgs := make([]map[string]any, 100)
		for i := range msgs {
			msgs[i] = map[string]any{"key": keys[0], "body": map[string]any{"n": i}}
		}
		h.Publish(key, "t", msgs...)
	}
	require.Eventually(t, func() bool { return r.Count() >= 8 }, 10*time.Second, 10*time.Millisecond, "the first queue drains")
	time.Sleep(time.Second) // well into the drain: its jobs hold the window

	msgs := make([]map[string]any, 50)
	for i := range msgs {
		msgs[i] = map[string]any{"key": keys[1], "body": map[string]any{"late": i}}
	}
	published := time.Now()
	h.Publish(key, "t", msgs...)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !lateFirst.IsZero()
	}, 10*time.Second, 10*time.Millisecond, "the second queue's first POST never came")
	mu.Lock()
	wait := lateFirst.Sub(published)
	mu.Unlock()
	t.Logf("the second queue's first POST %v after its publish; %d POSTs open at most", wait.Round(time.Millisecond), r.MaxInFlight())
	require.Less(t, wait, time.Second, "the second queue waited for the first queue's jobs")
	require.LessOrEqual(t, r.MaxInFlight(), 4)
}
