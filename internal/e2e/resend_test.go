package e2e

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestResendKeepsIDAndContinuesAttempts: resending a delivered message (alone, by
// offset range, by time range) sends it again through the retry topic under the same
// webhook-id with herald-attempt continuing from the recorded attempts; a message
// not yet delivered and a malformed range are refused with 422; resends are audited.
func TestResendKeepsIDAndContinuesAttempts(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 1)
	recv := heraldtest.NewReceiver(t)
	recv.SetSecret(h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": recv.URL,
		"subscriptions": []map[string]any{{"topic": "orders"}}}))
	key := h.CreateAPIKey("orders")
	start := time.Now().Add(-time.Second)
	ms := h.Publish(key, "orders", map[string]any{"body": map[string]any{"n": 1}}, map[string]any{"body": map[string]any{"n": 2}})
	recv.WaitCount(2, 10*time.Second)
	// Attempt rows are buffered up to a second; the cursor commits at least every second.
	waitAttempts := func(id string, n int) {
		q, off := ms[0].Queue, offsetOf(t, ms, id)
		require.Eventually(t, func() bool {
			as, err := h.Store.AttemptsByMessage(t.Context(), q, off)
			return err == nil && len(as) >= n
		}, 10*time.Second, 20*time.Millisecond)
	}
	waitAttempts(ms[0].ID, 1)
	waitAttempts(ms[1].ID, 1)
	require.Eventually(t, func() bool {
		code, _, _ := h.Do("POST", "/api/v1/groups/billing/messages/"+ms[0].ID+"/resend", h.Token(), nil)
		return code == 202
	}, 10*time.Second, 50*time.Millisecond, "resend accepted once the cursor passed the message")
	require.Eventually(t, func() bool { return len(recv.Get(ms[0].ID)) == 2 }, 10*time.Second, 10*time.Millisecond)
	again := recv.Get(ms[0].ID)[1]
	require.Equal(t, ms[0].ID, again.Header.Get("Webhook-Id"))
	require.Equal(t, "2", again.Header.Get("Herald-Attempt"))
	require.True(t, again.Verified)
	waitAttempts(ms[0].ID, 2)

	var res struct{ Queued, Skipped int }
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/groups/billing/resend",
		map[string]any{"queue": ms[0].Queue, "from_offset": ms[0].Offset, "to_offset": ms[1].Offset}, 202), &res))
	require.Equal(t, 2, res.Queued)
	require.Eventually(t, func() bool { return len(recv.Get(ms[0].ID)) == 3 && len(recv.Get(ms[1].ID)) == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "3", recv.Get(ms[0].ID)[2].Header.Get("Herald-Attempt"))
	require.Equal(t, "2", recv.Get(ms[1].ID)[1].Header.Get("Herald-Attempt"))

	require.NoError(t, json.Unmarshal(h.Admin("POST", "/groups/billing/resend",
		map[string]any{"from_time": start.UTC().Format(time.RFC3339Nano), "to_time": time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)}, 202), &res))
	require.Equal(t, 2, res.Queued+res.Skipped)
	require.Eventually(t, func() bool { return len(recv.Get(ms[1].ID)) >= 3 }, 10*time.Second, 10*time.Millisecond)

	code, body, _ := h.Do("POST", "/api/v1/groups/billing/messages/msg_"+strconv.FormatInt(ms[0].Queue, 10)+"_999/resend", h.Token(), nil)
	require.Equal(t, 404, code, string(body))
	for _, bad := range []map[string]any{{}, {"queue": ms[0].Queue, "from_offset": 5, "to_offset": 1},
		{"from_time": time.Now().UTC().Format(time.RFC3339), "to_time": start.UTC().Format(time.RFC3339)}} {
		code, body, _ := h.Do("POST", "/api/v1/groups/billing/resend", h.Token(), bad)
		require.Equal(t, 422, code, "%v: %s", bad, body)
	}
	// Offsets the cursor has not passed are left out.
	code, body, _ = h.Do("POST", "/api/v1/groups/billing/resend", h.Token(), map[string]any{"queue": ms[0].Queue, "from_offset": 1000, "to_offset": 2000})
	require.Equal(t, 202, code, string(body))
	require.Contains(t, string(body), `"queued":0`)

	audit := h.Admin("GET", "/audit-log?action=group.resend", nil, 200)
	require.Contains(t, string(audit), "group.resend")
}

func offsetOf(t *testing.T, ms []heraldtest.Published, id string) int64 {
	for _, m := range ms {
		if m.ID == id {
			return m.Offset
		}
	}
	t.Fatalf("no message %s", id)
	return 0
}
