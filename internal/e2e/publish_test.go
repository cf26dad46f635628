package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestIdempotencyKey replays a stored outcome for the same key and body, refuses the
// same key with another body, and scopes keys per topic.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("a", 2)
	h.CreateTopic("b", 1)
	key := h.CreateAPIKey("a", "b")
	body := map[string]any{"messages": []any{map[string]any{"body": map[string]int{"x": 1}}}}
	code, first, hdr := h.Do("POST", "/v1/topics/a/messages", key, body, "Idempotency-Key", "k-1")
	require.Equal(t, 201, code, string(first))
	require.Empty(t, hdr.Get("Idempotent-Replayed"))
	code, again, hdr := h.Do("POST", "/v1/topics/a/messages", key, body, "Idempotency-Key", "k-1")
	require.Equal(t, 201, code)
	require.Equal(t, "true", hdr.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(first), string(again))
	code, other, hdr := h.Do("POST", "/v1/topics/a/messages", key, map[string]any{"messages": []any{map[string]any{"body": 2}}}, "Idempotency-Key", "k-1")
	requireProblem(t, code, other, hdr, 422, "idempotency-mismatch")
	code, _, hdr = h.Do("POST", "/v1/topics/b/messages", key, body, "Idempotency-Key", "k-1")
	require.Equal(t, 201, code, "keys are scoped per topic")
	require.Empty(t, hdr.Get("Idempotent-Replayed"))
	var n int
	require.NoError(t, h.Store.DB().QueryRow("SELECT (SELECT COUNT(*) FROM queue_000001)+(SELECT COUNT(*) FROM queue_000002)").Scan(&n))
	require.Equal(t, 1, n, "the replay stored nothing")
}

// TestConsumeFromAndKeys checks consume_from earliest and latest, and that messages
// with one key land in one queue in publish order.
func TestConsumeFromAndKeys(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 4)
	key := h.CreateAPIKey("orders")
	var before []heraldtest.Published
	for i := range 10 {
		before = append(before, h.Publish(key, "orders", map[string]any{"body": i, "key": "customer-7"})...)
	}
	for _, p := range before {
		require.Equal(t, before[0].Queue, p.Queue, "one key, one queue")
	}
	for i := 1; i < len(before); i++ {
		require.Greater(t, before[i].Offset, before[i-1].Offset)
	}
	early, late := heraldtest.NewReceiver(t), heraldtest.NewReceiver(t)
	early.SetSecret(h.CreateGroup(map[string]any{"name": "early", "endpoint_url": early.URL, "consume_from": "earliest", "subscriptions": []map[string]any{{"topic": "orders"}}}))
	late.SetSecret(h.CreateGroup(map[string]any{"name": "late", "endpoint_url": late.URL, "subscriptions": []map[string]any{{"topic": "orders"}}}))
	after := h.Publish(key, "orders", map[string]any{"body": "new"}) // right after the 201: must reach "late"
	early.WaitCount(11, 10*time.Second)
	late.WaitCount(1, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // proves "late" gets no message published before it: nothing signals an absence
	require.Equal(t, 1, late.Count())
	require.NotEmpty(t, late.Get(after[0].ID))
	require.Equal(t, 11, early.Count())
}

// TestDispatcherTakeover stops the only dispatcher mid-stream and starts another:
// the new one claims the released cursors and delivers the rest.
func TestDispatcherTakeover(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Worker: true}, nil)
	h.CreateTopic("t", 2)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	h.Start(app.Roles{Dispatcher: true})
	msgs := make([]map[string]any, 50)
	for i := range msgs {
		msgs[i] = map[string]any{"body": i}
	}
	h.Publish(key, "t", msgs...)
	r.WaitCount(50, 10*time.Second)
	h.Stop() // api, worker and dispatcher down; cursors committed and released
	h.Start(app.Roles{API: true, Worker: true, Dispatcher: true})
	h.Publish(key, "t", msgs...)
	r.WaitCount(100, 10*time.Second)
	var owners int
	require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(DISTINCT owner) FROM cursors").Scan(&owners))
	require.Equal(t, 1, owners, "one dispatcher owns every cursor of the group")
}
