package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
)

// TestOperationalEventsReachSubscribedGroup: a group subscribed to herald.events gets
// group.paused and group.resumed (operator actions), dead_letter.created (once, with
// a count), breaker.opened (a failing endpoint) and endpoint.throttled (a 429) as
// webhooks; the topic cannot be created or published to by users.
func TestOperationalEventsReachSubscribedGroup(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 1)
	ops := heraldtest.NewReceiver(t)
	ops.SetSecret(h.CreateGroup(map[string]any{"name": "ops", "endpoint_url": ops.URL,
		"subscriptions": []map[string]any{{"topic": models.EventsTopic}}, "consume_from": "earliest"}))
	failing := heraldtest.NewReceiver(t)
	failing.Respond = func(heraldtest.Delivery) int { return 500 }
	failing.SetSecret(h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": failing.URL,
		"subscriptions": []map[string]any{{"topic": "orders"}}, "max_attempts": 1}))
	slow := heraldtest.NewReceiver(t)
	slow.Respond = func(heraldtest.Delivery) int { return 429 }
	slow.Header = func(heraldtest.Delivery) http.Header { return http.Header{"Retry-After": {"1"}} }
	slow.SetSecret(h.CreateGroup(map[string]any{"name": "crm", "endpoint_url": slow.URL,
		"subscriptions": []map[string]any{{"topic": "orders"}}}))

	h.Admin("POST", "/groups/crm/pause", nil, 200)
	h.Admin("POST", "/groups/crm/resume", nil, 200)
	key := h.CreateAPIKey("*")
	var msgs []map[string]any
	for i := range 12 {
		msgs = append(msgs, map[string]any{"body": map[string]any{"n": i}})
	}
	h.Publish(key, "orders", msgs...)

	seen := func() map[string][]models.Event {
		out := map[string][]models.Event{}
		for _, d := range ops.All() {
			var ev models.Event
			require.NoError(t, json.Unmarshal(d.Body, &ev))
			require.Equal(t, string(ev.Type), d.Header.Get("Herald-Tag"))
			require.Equal(t, models.EventsTopic, d.Header.Get("Herald-Topic"))
			out[string(ev.Type)] = append(out[string(ev.Type)], ev)
		}
		return out
	}
	want := []string{"group.paused", "group.resumed", "dead_letter.created", "breaker.opened", "endpoint.throttled"}
	require.Eventually(t, func() bool {
		got := seen()
		for _, w := range want {
			if len(got[w]) == 0 {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "events seen: %v", func() []string {
		var ks []string
		for k := range seen() {
			ks = append(ks, k)
		}
		return ks
	}())
	got := seen()
	require.Equal(t, "crm", got["group.paused"][0].Group)
	require.Equal(t, "admin", got["group.paused"][0].Data["by"])
	require.Equal(t, "crm", got["endpoint.throttled"][0].Group)
	require.Equal(t, "billing", got["breaker.opened"][0].Group)
	dl := got["dead_letter.created"]
	require.Len(t, dl, 1, "dead_letter.created is rate-limited to one a minute per group")
	require.Equal(t, "billing", dl[0].Group)
	require.GreaterOrEqual(t, dl[0].Data["count"], float64(1))

	code, body, _ := h.Do("POST", "/v1/topics/"+models.EventsTopic+"/messages", key, map[string]any{"messages": []map[string]any{{"body": 1}}})
	require.Equal(t, 403, code, string(body))
	code, body, _ = h.Do("POST", "/api/v1/topics", h.Token(), map[string]any{"name": models.EventsTopic, "queues": 1})
	require.Contains(t, []int{409, 422}, code, string(body))
}
