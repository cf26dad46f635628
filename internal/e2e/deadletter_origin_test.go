package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestDeadLetterOrigin: a dead letter's copy on `<group>.dlq` carries where it came
// from (origin id, topic and group, attempts, last error) next to the publisher's
// headers, as HTTP headers at batch size 1 and in the envelope's headers otherwise.
func TestDeadLetterOrigin(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("d", 1)
	failing := heraldtest.NewReceiver(t)
	failing.Respond = func(heraldtest.Delivery) int { return 500 }
	failing.SetSecret(h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": failing.URL, "max_attempts": 2, "retry_schedule": []int{1},
		"subscriptions": []map[string]any{{"topic": "d"}}}))
	msg := h.Publish(h.CreateAPIKey("d"), "d", map[string]any{"body": map[string]string{"order": "42"}, "headers": map[string]string{"x-order": "42"}})[0]
	require.Eventually(t, func() bool {
		code, _, _ := h.Do("GET", "/api/v1/topics/billing.dlq", h.Token(), nil)
		return code == 200
	}, 20*time.Second, 50*time.Millisecond, "the dead-letter topic")

	single, batch := heraldtest.NewReceiver(t), heraldtest.NewReceiver(t)
	sub := []map[string]any{{"topic": "billing.dlq"}}
	single.SetSecret(h.CreateGroup(map[string]any{"name": "audit1", "endpoint_url": single.URL, "consume_from": "earliest", "subscriptions": sub}))
	batch.SetSecret(h.CreateGroup(map[string]any{"name": "audit5", "endpoint_url": batch.URL, "consume_from": "earliest", "batch_size": 5, "subscriptions": sub}))
	single.WaitCount(1, 20*time.Second)
	batch.WaitCount(1, 20*time.Second)

	want := map[string]string{"herald-origin-id": msg.ID, "herald-origin-topic": "d", "herald-origin-group": "billing",
		"herald-attempts": "2", "herald-last-error": "http_status 500", "x-order": "42"}
	for _, d := range single.All() {
		require.True(t, d.Verified)
		for k, v := range want {
			require.Equal(t, v, d.Header.Get(k), k)
		}
		require.JSONEq(t, `{"order":"42"}`, string(d.Body))
	}
	for _, d := range batch.All() {
		var env struct {
			Messages []struct {
				Headers map[string]string `json:"headers"`
			} `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(d.Body, &env))
		require.Len(t, env.Messages, 1)
		require.Equal(t, want, env.Messages[0].Headers)
	}
}
