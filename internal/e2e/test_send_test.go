package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
)

// sendCase is one way an endpoint answers (or fails), for TestSendMatchesDelivery.
type sendCase struct {
	name    string
	status  int                                // the receiver's answer; 0 for an endpoint without a receiver
	body    func(d heraldtest.Delivery) string // response body; nil for none
	header  http.Header                        // response headers
	hang    bool                               // the receiver never answers (the POST times out)
	url     func(rx *heraldtest.Receiver) string
	outcome string // what the test send must report
	class   string // its error class, which the delivery attempt must record too
}

// TestSendMatchesDelivery: for each kind of answer and failure, a delivery and a
// test send reach the same receiver with the same headers (but the per-request
// webhook-id, timestamp, signature, traceparent and length, and the test send's
// herald-test), and the test send classifies the answer as the delivery attempt
// records it.
func TestSendMatchesDelivery(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("ts", 1)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refusedURL := "http://" + closed.Addr().String() + "/hook"
	closed.Close()
	cases := []sendCase{
		{name: "204", status: 204, outcome: "delivered"},
		{name: "200 naming the message", status: 200, outcome: "partial", class: "partial_failure",
			body: func(d heraldtest.Delivery) string { return fmt.Sprintf(`{"failed":[%q]}`, d.ID) }},
		{name: "200 naming another", status: 200, outcome: "delivered", body: func(heraldtest.Delivery) string { return `{"failed":["msg_999_1"]}` }},
		{name: "200 malformed failed", status: 200, outcome: "failed", class: "partial_malformed",
			body: func(heraldtest.Delivery) string { return `{"failed":"all"}` }},
		{name: "302", status: 302, header: http.Header{"Location": {"http://127.0.0.1:1/elsewhere"}}, outcome: "failed", class: "redirect"},
		{name: "400", status: 400, outcome: "failed", class: "http_status"},
		{name: "410", status: 410, outcome: "gone"},
		{name: "413", status: 413, outcome: "failed", class: "http_status"},
		{name: "429 with Retry-After", status: 429, header: http.Header{"Retry-After": {"120"}}, outcome: "throttled"},
		{name: "503 with Retry-After", status: 503, header: http.Header{"Retry-After": {"120"}}, outcome: "throttled"},
		{name: "503", status: 503, outcome: "failed", class: "http_status"},
		{name: "500", status: 500, outcome: "failed", class: "http_status"},
		{name: "timeout", status: 204, hang: true, outcome: "failed", class: "timeout"},
		{name: "connection refused", url: func(*heraldtest.Receiver) string { return refusedURL }, outcome: "failed", class: "connect"},
		{name: "https to plain http", outcome: "failed", class: "tls",
			url: func(rx *heraldtest.Receiver) string { return strings.Replace(rx.URL, "http://", "https://", 1) }},
		{name: "host does not resolve", url: func(*heraldtest.Receiver) string { return "http://herald-test.invalid/hook" }, outcome: "failed", class: "dns"},
	}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // registered after the receivers: runs before they close
	type capture struct {
		mu   sync.Mutex
		reqs map[string]heraldtest.Delivery // first request of each webhook-id
	}
	caps := make([]*capture, len(cases))
	for i, tc := range cases {
		rx := heraldtest.NewReceiver(t)
		c := &capture{reqs: map[string]heraldtest.Delivery{}}
		caps[i] = c
		rx.Respond = func(d heraldtest.Delivery) int {
			c.mu.Lock()
			if _, ok := c.reqs[d.ID]; !ok {
				c.reqs[d.ID] = d
			}
			c.mu.Unlock()
			if tc.hang {
				<-release
			}
			return tc.status
		}
		rx.Body, rx.Header = tc.body, func(heraldtest.Delivery) http.Header { return tc.header }
		url := rx.URL
		if tc.url != nil {
			url = tc.url(rx)
		}
		group := map[string]any{"name": fmt.Sprintf("g%d", i), "endpoint_url": url, "subscriptions": []map[string]any{{"topic": "ts"}},
			"retry_schedule": []int{3600}, "max_attempts": 3, "endpoint_headers": map[string]any{"x-api-key": "k-123"},
			"basic_auth": map[string]any{"username": "herald", "password": "pw"}}
		if tc.hang {
			group["timeout_ms"] = 500
		}
		rx.SetSecret(h.CreateGroup(group))
	}
	msg := h.Publish(h.CreateAPIKey("ts"), "ts", map[string]any{"body": map[string]any{"n": 1}})[0]

	perRequest := map[string]bool{"Webhook-Id": true, "Webhook-Timestamp": true, "Webhook-Signature": true, "Traceparent": true,
		"Content-Length": true, "Herald-Test": true}
	for i, tc := range cases {
		name := fmt.Sprintf("g%d", i)
		var groupID int64
		require.NoError(t, h.Store.DB().QueryRow("SELECT id FROM consumer_groups WHERE name = ?", name).Scan(&groupID))
		var first models.DeliveryAttempt
		require.Eventually(t, func() bool {
			as, err := h.Store.AttemptsByMessage(t.Context(), msg.Queue, msg.Offset)
			require.NoError(t, err)
			for _, a := range as {
				if a.GroupID == groupID {
					first = a
					return true
				}
			}
			return false
		}, 15*time.Second, 50*time.Millisecond, "%s: the delivery's attempt row", tc.name)

		var ts struct {
			OK           bool   `json:"ok"`
			WebhookID    string `json:"webhook_id"`
			Outcome      string `json:"outcome"`
			StatusCode   int    `json:"status_code"`
			ErrorClass   string `json:"error_class"`
			RetryAfterMS int64  `json:"retry_after_ms"`
		}
		require.NoError(t, json.Unmarshal(h.Admin("POST", "/groups/"+name+"/test", nil, 200), &ts))
		require.Equal(t, tc.outcome, ts.Outcome, tc.name)
		require.Equal(t, tc.outcome == "delivered", ts.OK, tc.name)
		require.Equal(t, tc.class, ts.ErrorClass, "%s: test send's class", tc.name)
		require.Equal(t, first.ErrorClass, ts.ErrorClass, "%s: the delivery attempt's class", tc.name)
		require.Equal(t, first.Status, ts.StatusCode, "%s: status", tc.name)
		if tc.outcome == "throttled" {
			require.Equal(t, int64(120_000), ts.RetryAfterMS, tc.name)
		}
		if tc.outcome == "gone" {
			require.Eventually(t, func() bool { return stats(t, h, name).Status == "paused" }, 10*time.Second, 50*time.Millisecond,
				"%s: the delivery paused the group", tc.name)
		}

		c := caps[i]
		c.mu.Lock()
		delivered, gotDelivery := c.reqs[msg.ID]
		test, gotTest := c.reqs[ts.WebhookID]
		c.mu.Unlock()
		if tc.url != nil {
			require.False(t, gotDelivery || gotTest, "%s: no request reaches a receiver", tc.name)
			continue
		}
		require.True(t, gotDelivery && gotTest, "%s: both requests reached the receiver", tc.name)
		require.True(t, delivered.Verified && test.Verified, "%s: both signatures verify", tc.name)
		require.Equal(t, "true", test.Header.Get("Herald-Test"), tc.name)
		for _, d := range []heraldtest.Delivery{delivered, test} {
			require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, d.Header.Get("Traceparent"), tc.name)
		}
		strip := func(hd http.Header) http.Header {
			out := http.Header{}
			for k, v := range hd {
				if !perRequest[k] {
					out[k] = v
				}
			}
			return out
		}
		require.Equal(t, strip(delivered.Header), strip(test.Header), "%s: headers", tc.name)
		require.Equal(t, "ts", test.Header.Get("Herald-Topic"), tc.name)
	}
}
