package api_test

import (
	"bytes"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

type attemptList struct {
	Items []struct {
		MessageID  string `json:"message_id"`
		Status     int    `json:"status"`
		ErrorClass string `json:"error_class"`
		At         string `json:"at"`
	} `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// TestGroupAttemptsSearch lists a group's attempts through the API, validated
// against openapi.yaml: filters by exact status, status class, error class and time
// range, pages newest first without repeats, and refuses bad filter values with 422
// and a pointer per parameter.
func TestGroupAttemptsSearch(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	sc := newSpecClient(t, h.BaseURL)
	tok := h.Token()
	recv := heraldtest.NewReceiver(t)
	recv.Respond = func(d heraldtest.Delivery) int {
		switch {
		case bytes.Contains(d.Body, []byte(`"server"`)):
			return 500
		case bytes.Contains(d.Body, []byte(`"missing"`)):
			return 404
		}
		return 200
	}
	h.CreateTopic("orders", 2)
	recv.SetSecret(h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": recv.URL, "max_attempts": 1, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "orders"}}}))
	var msgs []map[string]any
	for _, kind := range []string{"ok", "server", "missing", "ok", "server", "missing", "ok", "server", "missing"} {
		msgs = append(msgs, map[string]any{"body": map[string]string{"kind": kind}})
	}
	start := time.Now().UTC().Add(-time.Second)
	h.Publish(h.CreateAPIKey("orders"), "orders", msgs...)
	recv.WaitCount(3, 30*time.Second) // the 2xx ones; the receiver counts only those

	list := func(query string) attemptList {
		return decode[attemptList](t, sc.do("GET", "/api/v1/groups/billing/attempts"+query, tok, nil, 200))
	}
	require.Eventually(t, func() bool { return len(list("?limit=500").Items) == 9 }, 15*time.Second, 100*time.Millisecond,
		"workers record the 9 attempts")

	for _, tc := range []struct {
		query  string
		want   int
		status int
	}{
		{"?status=500", 3, 500}, {"?status_class=4xx", 3, 404}, {"?status_class=2xx", 3, 200},
		{"?error_class=http_status", 6, 0}, {"?error_class=http_status&status=404&status_class=4xx", 3, 404},
		{"?error_class=timeout", 0, 0},
		{"?since=" + url.QueryEscape(start.Format(time.RFC3339Nano)), 9, 0},
		{"?since=" + url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), 0, 0},
		{"?until=" + url.QueryEscape(start.Format(time.RFC3339Nano)), 0, 0},
	} {
		got := list(tc.query)
		require.Len(t, got.Items, tc.want, tc.query)
		require.Empty(t, got.NextCursor, tc.query)
		for _, a := range got.Items {
			if tc.status != 0 {
				require.Equal(t, tc.status, a.Status, tc.query)
			}
			if tc.query == "?error_class=http_status" {
				require.Equal(t, "http_status", a.ErrorClass)
			}
		}
	}

	// Pages of 4: 4, 4, 1, newest first, every attempt once.
	seen := map[string]bool{}
	var last string
	cursor, pages := "", 0
	for {
		p := list("?limit=4&cursor=" + cursor)
		pages++
		for _, a := range p.Items {
			require.False(t, seen[a.MessageID], "%s listed twice", a.MessageID)
			seen[a.MessageID] = true
			if last != "" {
				require.LessOrEqual(t, a.At, last, "newest first")
			}
			last = a.At
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	require.Len(t, seen, 9)
	require.Equal(t, 3, pages)

	for _, tc := range []struct{ query, pointer string }{
		{"?status=abc", "/status"}, {"?status=99", "/status"}, {"?status_class=6xx", "/status_class"},
		{"?status=404&status_class=5xx", "/status_class"}, {"?error_class=nope", "/error_class"},
		{"?since=yesterday", "/since"}, {"?until=2026-13-01T00:00:00Z", "/until"},
		{"?since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z", "/until"},
		{"?limit=0", "/limit"}, {"?limit=501", "/limit"}, {"?cursor=!!", "/cursor"},
	} {
		p := decode[struct {
			Type   string
			Errors []struct{ Pointer string }
		}](t, sc.do("GET", "/api/v1/groups/billing/attempts"+tc.query, tok, nil, 422))
		require.Equal(t, "https://herald.dev/problems/validation", p.Type, tc.query)
		require.Len(t, p.Errors, 1, tc.query)
		require.Equal(t, tc.pointer, p.Errors[0].Pointer, tc.query)
	}
	sc.do("GET", "/api/v1/groups/nope/attempts", tok, nil, 404)
}
