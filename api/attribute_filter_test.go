package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/models"
)

// TestAttributeFilter: a subscription's attribute filter is validated on create
// and update (422 pointing at the filter, shapes held to openapi.yaml), delivers
// only the messages whose x-* headers pass it, on the read path (a backlog) and the
// notification path (live publishes) alike, and counts the others as done.
func TestAttributeFilter(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	sc := newSpecClient(t, h.BaseURL)
	tok := h.Token()
	recv := heraldtest.NewReceiver(t)
	h.CreateTopic("orders", 1)
	key := h.CreateAPIKey("orders")
	publish := func(round string) {
		h.Publish(key, "orders",
			map[string]any{"body": map[string]string{"k": "ok-" + round}, "headers": map[string]string{"x-region": "eu"}},
			map[string]any{"body": map[string]string{"k": "no-us-" + round}, "headers": map[string]string{"X-Region": "us"}},
			map[string]any{"body": map[string]string{"k": "no-test-" + round}, "headers": map[string]string{"x-region": "eu", "x-test": "1"}},
			map[string]any{"body": map[string]string{"k": "no-none-" + round}})
	}
	publish("backlog")

	bad := func(filter string) map[string]any {
		return map[string]any{"name": "billing", "endpoint_url": recv.URL, "consume_from": "earliest",
			"subscriptions": []map[string]any{{"topic": "orders", "filter": filter}}}
	}
	for _, f := range []string{`attributes.region = "eu"`, `attributes.x-region = eu`, `attributes:x-a AND attributes:x-b OR attributes:x-c`} {
		out := sc.do("POST", "/api/v1/groups", tok, bad(f), 422)
		require.Contains(t, string(out), `"pointer":"/subscriptions/0/filter"`, f)
	}
	const filter = `attributes.x-region = "eu" AND NOT attributes:x-test`
	created := decode[struct {
		Subscriptions []struct{ Filter string } `json:"subscriptions"`
	}](t, sc.do("POST", "/api/v1/groups", tok, bad(filter), 201))
	require.Equal(t, filter, created.Subscriptions[0].Filter)
	recv.WaitCount(1, 10*time.Second)

	publish("live")
	recv.WaitCount(2, 10*time.Second)
	// Every row read, delivered or filtered out, is done: the cursor reaches the end.
	require.Eventually(t, func() bool {
		var cur cursors
		require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/billing/offsets", nil, 200), &cur))
		return len(cur.Items) == 1 && cur.Items[0].Offset == 8 && cur.Items[0].Lag == 0
	}, 15*time.Second, 20*time.Millisecond)
	require.Equal(t, 2, recv.Count())
	for _, d := range recv.All() {
		require.True(t, strings.Contains(string(d.Body), `"ok-`), string(d.Body))
	}

	out := sc.do("PATCH", "/api/v1/groups/billing", tok, map[string]any{"subscriptions": []map[string]any{{"topic": "orders", "filter": `hasPrefix(attributes.x-region, "e"`}}}, 422)
	require.Contains(t, string(out), `"pointer":"/subscriptions/0/filter"`)
	sc.do("PATCH", "/api/v1/groups/billing", tok, map[string]any{"subscriptions": []map[string]any{{"topic": "orders", "filter": `attributes:x-test`}}}, 200)
	publish("patched")
	recv.WaitCount(3, 10*time.Second)
	got := decode[struct {
		Subscriptions []struct{ Filter string } `json:"subscriptions"`
	}](t, sc.do("GET", "/api/v1/groups/billing", tok, nil, 200))
	require.Equal(t, `attributes:x-test`, got.Subscriptions[0].Filter)
}

// TestAttributeFilterReadsHeadersOnlyWhenFiltered: the dispatcher reads the headers
// column for the cursors of a filtered subscription only; a group without a filter
// costs no more than before (`id, tag, created_at, msg_key`).
func TestAttributeFilterReadsHeadersOnlyWhenFiltered(t *testing.T) {
	t.Parallel()
	var counter *heraldtest.SQLCounter
	h := heraldtest.StartHerald(t, func(c *config.Config) {
		counter = heraldtest.NewSQLCounter(t, c.MySQLDSN)
		c.MySQLDSN = counter.ProxiedDSN(t, c.MySQLDSN)
	})
	start := time.Now()
	queueOf := func(topic string) string {
		out := h.Admin("POST", "/topics", map[string]any{"name": topic, "queues": 1}, 201)
		var tp struct {
			Queues []struct{ ID int64 } `json:"queues"`
		}
		require.NoError(t, json.Unmarshal(out, &tp))
		return models.QueueTableName(tp.Queues[0].ID)
	}
	plainQ, filteredQ := queueOf("plain"), queueOf("filtered")
	key := h.CreateAPIKey("plain", "filtered")
	for _, topic := range []string{"plain", "filtered"} {
		h.Publish(key, topic, map[string]any{"body": 1, "headers": map[string]string{"x-region": "eu"}}, map[string]any{"body": 2})
	}
	plain, filtered := heraldtest.NewReceiver(t), heraldtest.NewReceiver(t)
	h.CreateGroup(map[string]any{"name": "plain", "endpoint_url": plain.URL, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "plain"}}})
	h.CreateGroup(map[string]any{"name": "filtered", "endpoint_url": filtered.URL, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "filtered", "filter": `attributes:x-region`}}})
	plain.WaitCount(2, 10*time.Second)
	filtered.WaitCount(1, 10*time.Second)

	var plainReads, filteredHeaderReads int
	for _, s := range counter.Since(start) {
		switch {
		case strings.Contains(s.SQL, "headers FROM "+plainQ):
			t.Fatalf("the unfiltered group read headers: %s", s.SQL)
		case strings.Contains(s.SQL, "FROM "+plainQ+" WHERE id > "):
			plainReads++
		case strings.Contains(s.SQL, "headers FROM "+filteredQ):
			filteredHeaderReads++
		}
	}
	require.Positive(t, plainReads, "the unfiltered group's backlog was read")
	require.Positive(t, filteredHeaderReads, "the filtered group's backlog was read with headers")
	require.Equal(t, 1, filtered.Count())
}
