package e2e

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// arrivalsByBody maps each delivery's body to its times of arrival.
func arrivalsByBody(r *heraldtest.Receiver) map[string][]time.Time {
	out := map[string][]time.Time{}
	for id := range r.All() {
		for _, d := range r.Get(id) {
			out[string(d.Body)] = append(out[string(d.Body)], d.At)
		}
	}
	return out
}

// TestDelayedInterleaved publishes messages delayed 1–5 s interleaved with
// immediate ones: each immediate message arrives at once (well before the
// shortest delay), each delayed one no earlier than its deliver_at and within 2 s
// after it; a cancelled one is never sent, a waiting one reads back with its due
// time, and bad values are refused with 422 naming the field.
func TestDelayedInterleaved(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 2)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")

	due := map[string]time.Time{}
	sent := map[string]time.Time{}
	for i := range 20 {
		now := fmt.Sprintf(`{"now":%d}`, i)
		sent[now] = time.Now()
		h.Publish(key, "t", map[string]any{"body": json.RawMessage(now)})
		later := fmt.Sprintf(`{"later":%d}`, i)
		msg := map[string]any{"body": json.RawMessage(later), "delay_seconds": 1 + i%5}
		if i%3 == 0 {
			msg["key"] = fmt.Sprintf("k%d", i%4)
		}
		p := h.Publish(key, "t", msg)[0]
		require.Regexp(t, `^dly_[0-9]+$`, p.ID)
		at, err := time.Parse(time.RFC3339Nano, p.DeliverAt)
		require.NoError(t, err)
		due[later] = at
	}
	cancelled := h.Publish(key, "t", map[string]any{"body": json.RawMessage(`{"cancelled":1}`), "delay_seconds": 2})[0]
	var view map[string]any
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/messages/"+cancelled.ID, nil, 200), &view))
	require.Equal(t, "waiting", view["state"])
	require.Equal(t, cancelled.DeliverAt, view["deliver_at"])
	h.Admin("DELETE", "/messages/"+cancelled.ID, nil, 204)
	h.Admin("DELETE", "/messages/"+cancelled.ID, nil, 404)
	h.Admin("GET", "/messages/"+cancelled.ID, nil, 404)

	for _, tc := range []struct {
		msgs    []map[string]any
		pointer string
	}{
		{[]map[string]any{{"body": 1, "delay_seconds": 0}}, "/messages/0/delay_seconds"},
		{[]map[string]any{{"body": 1, "delay_seconds": 31_536_001}}, "/messages/0/delay_seconds"},
		{[]map[string]any{{"body": 1, "deliver_at": "soon"}}, "/messages/0/deliver_at"},
		{[]map[string]any{{"body": 1, "delay_seconds": 5, "deliver_at": "2030-01-01T00:00:00Z"}}, "/messages/0/deliver_at"},
		{[]map[string]any{{"body": 1}, {"body": 2, "delay_seconds": 5}}, "/messages"},
	} {
		code, body, _ := h.Do("POST", "/v1/topics/t/messages", key, map[string]any{"messages": tc.msgs})
		require.Equal(t, 422, code, string(body))
		require.Contains(t, string(body), `"pointer":"`+tc.pointer+`"`, string(body))
	}

	r.WaitCount(40, 20*time.Second)
	time.Sleep(2500 * time.Millisecond) // the cancelled message's time, and more
	seen := arrivalsByBody(r)
	require.NotContains(t, seen, `{"cancelled":1}`, "a cancelled message is never sent")
	for body, at := range sent {
		require.Len(t, seen[body], 1, body)
		require.Less(t, seen[body][0].Sub(at), time.Second, "%s arrives at once", body)
	}
	for body, at := range due {
		require.Len(t, seen[body], 1, body)
		late := seen[body][0].Sub(at)
		t.Logf("%s: %v after its time", body, late.Round(time.Millisecond))
		require.GreaterOrEqual(t, late, time.Duration(0), "%s not before its time", body)
		require.LessOrEqual(t, late, 2*time.Second, "%s within 2 s of its time", body)
	}
}

// TestDelayedSurvivesKill parks 100 messages (one Idempotency-Key publish, sent
// twice) and kills -9 the `herald all` process that would move them before they
// are due: a fresh process takes the maintenance lease and delivers each of them,
// once.
func TestDelayedSurvivesKill(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("t", 3)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	env := []string{"HERALD_HTTP_ADDR=127.0.0.1:0", "HERALD_MAINTENANCE_LEASE_DURATION=2s", "HERALD_MAINTENANCE_RENEW_INTERVAL=300ms"}
	proc := startRoleProcess(t, h, "all", env...)
	msgs := make([]map[string]any, 100)
	for i := range msgs {
		msgs[i] = map[string]any{"body": i, "delay_seconds": 3, "key": fmt.Sprintf("k%d", i%7)}
	}
	var first []heraldtest.Published
	for range 2 {
		code, body, hdr := h.Do("POST", "/v1/topics/t/messages", key, map[string]any{"messages": msgs}, "Idempotency-Key", "reminders-1")
		require.Equal(t, 201, code, string(body))
		var out struct{ Messages []heraldtest.Published }
		require.NoError(t, json.Unmarshal(body, &out))
		if first == nil {
			first = out.Messages
			continue
		}
		require.Equal(t, "true", hdr.Get("Idempotent-Replayed"))
		require.Equal(t, first, out.Messages, "the same delayed messages, stored once")
	}
	time.Sleep(time.Second)
	require.NoError(t, proc.Process.Signal(syscall.SIGKILL))
	_ = proc.Wait()
	startRoleProcess(t, h, "all", env...)
	r.WaitCount(100, 30*time.Second)
	time.Sleep(500 * time.Millisecond)
	seen := arrivalsByBody(r)
	for i := range 100 {
		require.Len(t, seen[fmt.Sprint(i)], 1, "message %d", i)
	}
	require.Equal(t, 100, r.Count())
}
