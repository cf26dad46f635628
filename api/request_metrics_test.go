package api_test

import (
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

// TestRequestMetricsAndDeletedGroupSeries scrapes /metrics: requests are counted by
// route template (never the raw path), method and status class with a latency
// histogram, and a deleted group's worker series go away as its dispatcher's do.
func TestRequestMetricsAndDeletedGroupSeries(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // the metrics listener takes the port next
	h := heraldtest.StartHerald(t, func(c *config.Config) { c.MetricsAddr = addr })
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
