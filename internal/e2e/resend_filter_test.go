package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/heraldtest"
)

// TestResendHonoursAttributeFilter: a resend (by time, by offset range, or of one
// message) applies the group's subscription as delivery does, tags and attribute
// filter alike. Ranges queue and count only the messages the subscription accepts;
// a single resend of an excluded message is refused with 422 (type validation,
// pointing at /id) and nothing excluded is ever delivered.
func TestResendHonoursAttributeFilter(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 1)
	recv := heraldtest.NewReceiver(t)
	recv.SetSecret(h.CreateGroup(map[string]any{"name": "eu-billing", "endpoint_url": recv.URL,
		"subscriptions": []map[string]any{{"topic": "orders", "tags": []string{"created"},
			"filter": `attributes.x-region = "eu" AND NOT attributes:x-test`}}}))
	g, err := h.Store.GroupGetByName(t.Context(), "eu-billing")
	require.NoError(t, err)
	key := h.CreateAPIKey("orders")
	start := time.Now().Add(-time.Second)
	msg := func(tag string, headers map[string]string) map[string]any {
		return map[string]any{"tag": tag, "body": map[string]any{"tag": tag}, "headers": headers}
	}
	ms := h.Publish(key, "orders",
		msg("created", map[string]string{"x-region": "eu"}),                // 0: matches
		msg("created", map[string]string{"X-Region": "us"}),                // 1: wrong region
		msg("created", map[string]string{"x-region": "eu", "x-test": "1"}), // 2: a test message
		msg("created", nil), // 3: no region
		msg("deleted", map[string]string{"x-region": "eu"}),                  // 4: tag filtered
		msg("created", map[string]string{"x-region": "eu", "x-tenant": "a"}), // 5: matches
	)
	matching, excluded := []string{ms[0].ID, ms[5].ID}, []string{ms[1].ID, ms[2].ID, ms[3].ID, ms[4].ID}
	last := ms[len(ms)-1]

	// noneExcluded asserts the receiver never saw an excluded message.
	noneExcluded := func(when string) {
		t.Helper()
		for _, id := range excluded {
			require.Empty(t, recv.Get(id), "%s: excluded message %s was delivered", when, id)
		}
	}
	// settled waits until each matching message arrived n times and the group's
	// retry topic is empty again: every resent row was sent, so an excluded one
	// queued by mistake would have been delivered by now.
	settled := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool {
			for _, id := range matching {
				if len(recv.Get(id)) < n {
					return false
				}
			}
			left, err := h.Store.RetryCount(t.Context(), g.ID)
			return err == nil && left == 0
		}, 15*time.Second, 20*time.Millisecond)
		for _, id := range matching {
			require.Len(t, recv.Get(id), n, id)
		}
	}

	// First delivery: the cursor passes every message, delivering only the matching ones.
	require.Eventually(t, func() bool {
		ps, err := h.Store.Cursors().GroupPositions(t.Context(), []int64{g.ID}, false)
		return err == nil && len(ps) == 1 && ps[0].Offset == last.Offset
	}, 15*time.Second, 20*time.Millisecond)
	settled(1)
	noneExcluded("first delivery")

	var res struct{ Queued, Skipped int }
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/groups/eu-billing/resend", map[string]any{
		"from_time": start.UTC().Format(time.RFC3339Nano), "to_time": time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)}, 202), &res))
	require.Equal(t, len(matching), res.Queued+res.Skipped, "resend by time counts only matching messages: %+v", res)
	settled(2)
	noneExcluded("resend by time")

	require.NoError(t, json.Unmarshal(h.Admin("POST", "/groups/eu-billing/resend", map[string]any{
		"queue": ms[0].Queue, "from_offset": ms[0].Offset, "to_offset": last.Offset}, 202), &res))
	require.Equal(t, len(matching), res.Queued+res.Skipped, "resend by range counts only matching messages: %+v", res)
	settled(3)
	noneExcluded("resend by range")

	// A range of excluded messages only queues nothing.
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/groups/eu-billing/resend", map[string]any{
		"queue": ms[1].Queue, "from_offset": ms[1].Offset, "to_offset": ms[4].Offset}, 202), &res))
	require.Equal(t, 0, res.Queued+res.Skipped, "%+v", res)

	for _, id := range excluded {
		code, body, hdr := h.Do("POST", "/api/v1/groups/eu-billing/messages/"+id+"/resend", h.Token(), nil)
		require.Equal(t, 422, code, "%s: %s", id, body)
		require.Equal(t, "application/problem+json", hdr.Get("Content-Type"))
		var p api.Problem
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, api.ProblemBase+string(api.ProblemValidation), p.Type, string(body))
		require.Len(t, p.Errors, 1, string(body))
		require.Equal(t, "/id", p.Errors[0].Pointer)
		require.Contains(t, p.Errors[0].Detail, "filter excludes this message", string(body))
	}
	code, body, _ := h.Do("POST", "/api/v1/groups/eu-billing/messages/"+ms[0].ID+"/resend", h.Token(), nil)
	require.Equal(t, 202, code, string(body))
	require.Eventually(t, func() bool { return len(recv.Get(ms[0].ID)) == 4 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, ms[0].ID, recv.Get(ms[0].ID)[3].Header.Get("Webhook-Id"))
	require.Eventually(t, func() bool {
		left, err := h.Store.RetryCount(t.Context(), g.ID)
		return err == nil && left == 0
	}, 10*time.Second, 20*time.Millisecond)
	noneExcluded("single resends")
	require.Equal(t, len(matching), recv.Count(), "only the matching messages were ever delivered")
}
