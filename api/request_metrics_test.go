package api_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
)

// startWithMetrics starts a Herald (mutate may be nil) serving /metrics on a port of
// its own, waits until it answers, and returns it with a function that scrapes it.
func startWithMetrics(t *testing.T, mutate func(*config.Config)) (*heraldtest.Herald, func() string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // the metrics listener takes the port next
	h := heraldtest.StartHerald(t, func(c *config.Config) {
		c.MetricsAddr = addr
		if mutate != nil {
			mutate(c)
		}
	})
	scrape := func() string {
		resp, err := http.Get("http://" + addr + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	return h, scrape
}

// TestRequestMetricsAndDeletedGroupSeries scrapes /metrics: requests are counted by
// route template (never the raw path), method and status class with a latency
// histogram, and a deleted group's worker series go away as its dispatcher's do.
func TestRequestMetricsAndDeletedGroupSeries(t *testing.T) {
	t.Parallel()
	h, scrape := startWithMetrics(t, nil)

	recv := heraldtest.NewReceiver(t)
	group := heraldtest.RandomName("metrics-")
	h.CreateTopic("orders", 1)
	h.CreateGroup(map[string]any{"name": group, "endpoint_url": recv.URL, "subscriptions": []map[string]any{{"topic": "orders"}}})
	h.Admin("GET", "/groups/"+group, nil, 200)
	h.Admin("GET", "/groups/no-such-group", nil, 404)
	key := h.CreateAPIKey("orders")
	h.Publish(key, "orders", map[string]any{"body": 1})
	recv.WaitCount(1, 10*time.Second)

	out := scrape()
	require.Contains(t, out, `herald_api_requests_total{code="2xx",method="GET",route="/api/v1/groups/:group"}`)
	require.Contains(t, out, `herald_api_requests_total{code="4xx",method="GET",route="/api/v1/groups/:group"}`)
	require.Contains(t, out, `herald_api_requests_total{code="2xx",method="POST",route="/v1/topics/:topic/messages"}`)
	require.Contains(t, out, `herald_api_request_duration_seconds_count{method="GET",route="/api/v1/groups/:group"}`)
	require.NotContains(t, out, `route="/api/v1/groups/`+group+`"`)
	require.NotContains(t, out, `route="/api/v1/groups/no-such-group"`)
	// The worker counts a delivery when the POST's answer is back, which may be
	// after the receiver saw it.
	require.Eventually(t, func() bool {
		out := scrape()
		return strings.Contains(out, `herald_delivered_messages_total{group="`+group+`"}`) &&
			strings.Contains(out, `herald_post_duration_seconds_count{group="`+group+`"}`)
	}, 10*time.Second, 20*time.Millisecond, "the group's worker series are exported")

	h.Admin("DELETE", "/groups/"+group, nil, 200)
	require.Eventually(t, func() bool { return !strings.Contains(scrape(), `group="`+group+`"`) }, 10*time.Second, 50*time.Millisecond,
		"series of the deleted group are still exported")
}

// TestDeletedTopicsLoseTheirSeries creates, publishes to and deletes 50 topics: every
// series naming one of them (the api's published count, the maintenance role's
// retention series) goes with its topic, while a topic that stays keeps its series.
func TestDeletedTopicsLoseTheirSeries(t *testing.T) {
	t.Parallel()
	h, scrape := startWithMetrics(t, func(c *config.Config) { c.Maintenance.RetentionInterval = 200 * time.Millisecond })
	prefix := heraldtest.RandomName("gone-")
	names := make([]string, 50)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		h.CreateTopic(names[i], 1)
	}
	kept := prefix + "-kept"
	h.CreateTopic(kept, 1)
	key := h.CreateAPIKey(prefix + "*")
	for _, n := range append(names, kept) {
		h.Publish(key, n, map[string]any{"body": n})
	}
	require.Eventually(t, func() bool {
		out := scrape()
		return strings.Contains(out, `herald_published_messages_total{topic="`+names[0]+`"}`) &&
			strings.Contains(out, `herald_retention_held_back_messages{queue=`) && strings.Contains(out, `topic="`+names[0]+`"}`)
	}, 10*time.Second, 50*time.Millisecond, "the topics' series are exported")
	for _, n := range names {
		h.Admin("DELETE", "/topics/"+n, nil, 204)
	}
	named := func(out string) []string { // lines naming a deleted topic
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			for _, n := range names {
				if strings.Contains(l, `topic="`+n+`"`) {
					lines = append(lines, l)
				}
			}
		}
		return lines
	}
	require.Eventually(t, func() bool { return len(named(scrape())) == 0 }, 15*time.Second, 50*time.Millisecond,
		"series of deleted topics are still exported: %v", named(scrape()))
	require.Contains(t, scrape(), `herald_published_messages_total{topic="`+kept+`"}`, "a topic that stays keeps its series")
}
