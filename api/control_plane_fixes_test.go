package api_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/heraldtest"
)

// TestForceDeletedTopicPausesItsOnlySubscribers: a group whose last subscription
// goes with a force-deleted topic is paused with a reason, stays editable by a
// PATCH that does not give it subscriptions, cannot be resumed without one, and
// resumes once it subscribes again. A group keeping another subscription runs on.
func TestForceDeletedTopicPausesItsOnlySubscribers(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	recv := heraldtest.NewReceiver(t)
	h.CreateTopic("gone", 1)
	h.CreateTopic("kept", 1)
	h.CreateGroup(map[string]any{"name": "lonely", "endpoint_url": recv.URL, "subscriptions": []map[string]any{{"topic": "gone"}}})
	h.CreateGroup(map[string]any{"name": "busy", "endpoint_url": recv.URL, "subscriptions": []map[string]any{{"topic": "gone"}, {"topic": "kept"}}})

	h.Admin("DELETE", "/topics/gone?force=true", nil, 200)

	g := decode[group](t, h.Admin("GET", "/groups/lonely", nil, 200))
	require.Equal(t, "paused", g.Status)
	require.Empty(t, g.Subscriptions)
	var full struct {
		PausedReason string `json:"paused_reason"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/lonely", nil, 200), &full))
	require.Contains(t, full.PausedReason, "gone")
	require.Equal(t, "running", decode[group](t, h.Admin("GET", "/groups/busy", nil, 200)).Status)

	g = decode[group](t, h.Admin("PATCH", "/groups/lonely", map[string]any{"rate_limit": 7}, 200))
	require.Equal(t, 7, g.RateLimit)
	require.Equal(t, "paused", g.Status)
	h.Admin("POST", "/groups/lonely/resume", nil, 422)

	h.Admin("PATCH", "/groups/lonely", map[string]any{"subscriptions": []map[string]any{{"topic": "kept"}}}, 200)
	require.Equal(t, "running", decode[group](t, h.Admin("POST", "/groups/lonely/resume", nil, 200)).Status)
}

// TestDeadLetterTopicSubscribableAhead: another group may subscribe to `<g>.dlq`
// before g dead-letters anything; the topic is created then, still cannot be
// created by hand, published to via /v1, or subscribed to by g itself.
func TestDeadLetterTopicSubscribableAhead(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	recv := heraldtest.NewReceiver(t)
	h.CreateTopic("orders", 1)
	h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": recv.URL, "subscriptions": []map[string]any{{"topic": "orders"}}})

	h.Admin("POST", "/topics", map[string]any{"name": "billing.dlq", "queues": 1}, 422)
	h.Admin("POST", "/groups", map[string]any{"name": "handler", "endpoint_url": recv.URL, "subscriptions": []map[string]any{{"topic": "nobody.dlq"}}}, 422)
	h.Admin("POST", "/groups", map[string]any{"name": "handler", "endpoint_url": recv.URL, "subscriptions": []map[string]any{{"topic": "billing.dlq"}}}, 201)
	h.Admin("GET", "/topics/billing.dlq", nil, 200)
	h.Admin("PATCH", "/groups/billing", map[string]any{"subscriptions": []map[string]any{{"topic": "orders"}, {"topic": "billing.dlq"}}}, 422)

	// A second group subscribing later finds the topic already there.
	h.CreateTopic("audit", 1)
	h.CreateGroup(map[string]any{"name": "second", "endpoint_url": recv.URL, "subscriptions": []map[string]any{{"topic": "audit"}}})
	h.Admin("PATCH", "/groups/second", map[string]any{"subscriptions": []map[string]any{{"topic": "audit"}, {"topic": "billing.dlq"}}}, 200)

	key := h.CreateAPIKey("*")
	code, body, _ := h.Do("POST", "/v1/topics/billing.dlq/messages", key, map[string]any{"messages": []map[string]any{{"body": 1}}})
	require.NotEqual(t, 201, code, string(body))
}

// TestGroupGetDoesNotRevealSecret: a plain GET of a group shows no signing secret
// and writes no audit row; `?include=secret` shows it to operators and admins and
// is audited once per read.
func TestGroupGetDoesNotRevealSecret(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	recv := heraldtest.NewReceiver(t)
	h.CreateTopic("orders", 1)
	secret := h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": recv.URL, "subscriptions": []map[string]any{{"topic": "orders"}}})

	reads := func() int {
		var out struct {
			Items []struct {
				Action string `json:"action"`
			} `json:"items"`
		}
		require.NoError(t, json.Unmarshal(h.Admin("GET", "/audit-log?limit=500", nil, 200), &out))
		n := 0
		for _, e := range out.Items {
			if e.Action == "group.secret.read" {
				n++
			}
		}
		return n
	}
	for range 3 {
		require.Empty(t, decode[group](t, h.Admin("GET", "/groups/billing", nil, 200)).SigningSecret)
	}
	require.Zero(t, reads())
	require.Equal(t, secret, decode[group](t, h.Admin("GET", "/groups/billing?include=secret", nil, 200)).SigningSecret)
	require.Equal(t, 1, reads())
	h.Admin("GET", "/groups/billing?include=everything", nil, 422)

	// A client echoing what a plain GET showed may PATCH it back.
	echo := h.Admin("GET", "/groups/billing", nil, 200)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(echo, &doc))
	doc["rate_limit"] = 3
	require.Equal(t, 3, decode[group](t, h.Admin("PATCH", "/groups/billing", doc, 200)).RateLimit)
}

// TestHeaderNamesAnyCase: endpoint headers and message headers are accepted in any
// case, stored lower case, sent, and removed by a merge patch in any case.
func TestHeaderNamesAnyCase(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	recv := heraldtest.NewReceiver(t)
	h.CreateTopic("orders", 1)
	out := h.Admin("POST", "/groups", map[string]any{"name": "billing", "endpoint_url": recv.URL, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "orders"}}, "endpoint_headers": map[string]string{"X-Api-Key": "k1"}}, 201)
	var g struct {
		EndpointHeaders map[string]string `json:"endpoint_headers"`
	}
	require.NoError(t, json.Unmarshal(out, &g))
	require.Contains(t, g.EndpointHeaders, "x-api-key")
	out = h.Admin("PATCH", "/groups/billing", map[string]any{"endpoint_headers": map[string]any{"X-Api-Key": "k2", "X-Other-Name": "v"}}, 200)
	require.NoError(t, json.Unmarshal(out, &g))
	require.Len(t, g.EndpointHeaders, 2)
	require.Contains(t, g.EndpointHeaders, "x-other-name")

	key := h.CreateAPIKey("orders")
	h.Publish(key, "orders", map[string]any{"body": map[string]int{"n": 1}, "headers": map[string]string{"X-Region": "eu"}})
	recv.WaitCount(1, 10*time.Second)
	for _, d := range recv.All() {
		require.Equal(t, "eu", d.Header.Get("x-region"))
		require.Equal(t, "k2", d.Header.Get("X-Api-Key"))
	}
	out = h.Admin("PATCH", "/groups/billing", map[string]any{"endpoint_headers": map[string]any{"X-OTHER-NAME": nil}}, 200)
	var after struct {
		EndpointHeaders map[string]string `json:"endpoint_headers"`
	}
	require.NoError(t, json.Unmarshal(out, &after))
	require.Equal(t, []string{"x-api-key"}, slices.Collect(maps.Keys(after.EndpointHeaders)))
}

// TestTopicCreateResponseEqualsGet: the create response is the topic as a GET shows it.
func TestTopicCreateResponseEqualsGet(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	created := h.Admin("POST", "/topics", map[string]any{"name": "orders", "queues": 2, "retention_hours": 24}, 201)
	got := h.Admin("GET", "/topics/orders", nil, 200)
	require.JSONEq(t, string(got), string(created))
}

// TestEndpointAuthNeverFollowsToAnotherHost: moving a group's endpoint to another
// receiver (here another port) drops its stored header values and basic-auth
// password, says so in Herald-Dropped-Endpoint-Auth, and the new receiver gets
// neither; an admin's keep_endpoint_auth=true keeps them, and they arrive.
func TestEndpointAuthNeverFollowsToAnotherHost(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	first, second := heraldtest.NewReceiver(t), heraldtest.NewReceiver(t)
	h.CreateTopic("orders", 1)
	secret := h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": first.URL, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "orders"}}, "endpoint_headers": map[string]string{"x-api-key": "k1"}})
	first.SetSecret(secret)
	second.SetSecret(secret)
	code, body, hdr := h.Do("PATCH", "/api/v1/groups/billing", h.Token(), map[string]any{"endpoint_url": second.URL})
	require.Equal(t, 200, code, string(body))
	require.Equal(t, "x-api-key", hdr.Get(api.DroppedEndpointAuthHeader))
	require.Empty(t, decode[struct {
		EndpointHeaders map[string]string `json:"endpoint_headers"`
	}](t, body).EndpointHeaders)
	key := h.CreateAPIKey("orders")
	h.Publish(key, "orders", map[string]any{"body": map[string]int{"n": 1}})
	second.WaitCount(1, 10*time.Second)
	for _, d := range second.All() {
		require.Empty(t, d.Header.Get("x-api-key"), "the new host never gets the old host's key")
	}

	h.Admin("PATCH", "/groups/billing", map[string]any{"endpoint_headers": map[string]string{"x-api-key": "k2"}}, 200)
	code, body, hdr = h.Do("PATCH", "/api/v1/groups/billing?keep_endpoint_auth=true", h.Token(), map[string]any{"endpoint_url": first.URL})
	require.Equal(t, 200, code, string(body))
	require.Empty(t, hdr.Get(api.DroppedEndpointAuthHeader))
	// Stands for the worker's group cache (a copy is used up to 1 s; URL and
	// credentials always come from one version of the group).
	time.Sleep(1500 * time.Millisecond)
	h.Publish(key, "orders", map[string]any{"body": map[string]int{"n": 2}})
	first.WaitCount(1, 10*time.Second)
	for _, d := range first.All() {
		require.Equal(t, "k2", d.Header.Get("x-api-key"), "an admin kept it")
	}
	h.Admin("PATCH", "/groups/billing?keep_endpoint_auth=maybe", map[string]any{"rate_limit": 1}, 422)
}
