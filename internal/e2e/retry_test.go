package e2e

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
)

// scripted returns a Respond function that answers from statuses in order, then 204.
func scripted(statuses ...int) func(heraldtest.Delivery) int {
	var mu sync.Mutex
	i := 0
	return func(heraldtest.Delivery) int {
		mu.Lock()
		defer mu.Unlock()
		if i < len(statuses) {
			i++
			return statuses[i-1]
		}
		return 204
	}
}

func attemptsOf(t *testing.T, h *heraldtest.Herald, queue, offset int64, want int) []models.DeliveryAttempt {
	t.Helper()
	var as []models.DeliveryAttempt
	require.Eventually(t, func() bool {
		var err error
		as, err = h.Store.AttemptsByMessage(t.Context(), queue, offset)
		require.NoError(t, err)
		return len(as) >= want
	}, 10*time.Second, 50*time.Millisecond, "attempt rows of msg_%d_%d", queue, offset)
	return as
}

// TestRetryThenSuccess: the endpoint fails twice then answers 200; the message is
// delivered on attempt 3, each attempt recorded with its class, one webhook-id.
func TestRetryThenSuccess(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("r", 1)
	r := heraldtest.NewReceiver(t)
	var seen []string
	var mu sync.Mutex
	inner := scripted(500, 503)
	r.Respond = func(d heraldtest.Delivery) int {
		mu.Lock()
		seen = append(seen, d.ID+"#"+d.Header.Get("herald-attempt"))
		mu.Unlock()
		return inner(d)
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "retry_schedule": []int{1, 1},
		"subscriptions": []map[string]any{{"topic": "r"}}}))
	msg := h.Publish(h.CreateAPIKey("r"), "r", map[string]any{"body": map[string]int{"n": 1}})[0]
	r.WaitCount(1, 20*time.Second)
	mu.Lock()
	require.Equal(t, []string{msg.ID + "#1", msg.ID + "#2", msg.ID + "#3"}, seen)
	mu.Unlock()
	as := attemptsOf(t, h, msg.Queue, msg.Offset, 3)
	require.Equal(t, []int{1, 2, 3}, []int{as[0].Attempt, as[1].Attempt, as[2].Attempt})
	require.Equal(t, []int{500, 503, 204}, []int{as[0].Status, as[1].Status, as[2].Status})
	require.Equal(t, "http_status", as[0].ErrorClass)
	require.Equal(t, "", as[2].ErrorClass)
	for _, a := range as {
		require.Equal(t, msg.ID, a.WebhookID)
	}
	waitCommitted(t, h, msg.Queue, msg.Offset) // the cursor never waited for the retries
	n, err := h.Store.RetryCount(t.Context(), 1)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestDeadLetterAndRedrive: always 500 with max_attempts 3 makes a dead letter with
// its last error, appended to `<group>.dlq`; a redrive delivers it once the
// endpoint recovers, with the same webhook-id; a second redrive does nothing.
func TestDeadLetterAndRedrive(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("d", 1)
	r := heraldtest.NewReceiver(t)
	var healthy atomic.Bool
	r.Respond = func(heraldtest.Delivery) int {
		if healthy.Load() {
			return 204
		}
		return 500
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": r.URL, "max_attempts": 3, "retry_schedule": []int{1},
		"subscriptions": []map[string]any{{"topic": "d"}}}))
	key := h.CreateAPIKey("d")
	msg := h.Publish(key, "d", map[string]any{"body": map[string]string{"order": "42"}})[0]
	waitCommitted(t, h, msg.Queue, msg.Offset) // the cursor moves on at once

	var dl []map[string]any
	require.Eventually(t, func() bool {
		var out struct{ Items []map[string]any }
		require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/billing/dead-letters", nil, 200), &out))
		dl = out.Items
		return len(dl) == 1 && dl[0]["dlq_offset"] != nil
	}, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, msg.ID, dl[0]["message_id"])
	require.Equal(t, "pending", dl[0]["state"])
	require.EqualValues(t, 3, dl[0]["attempts"])
	require.EqualValues(t, 500, dl[0]["last_status"])
	require.Contains(t, dl[0]["last_error"], "http_status 500")

	// The dead-letter topic holds a copy another group can consume.
	var topic struct{ Queues []struct{ ID int64 } }
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/topics/billing.dlq", nil, 200), &topic))
	copies, err := h.Store.Queues().MessagesGet(t.Context(), topic.Queues[0].ID, []int64{1})
	require.NoError(t, err)
	require.Len(t, copies, 1)
	require.JSONEq(t, `{"order":"42"}`, string(copies[0].Body))

	healthy.Store(true)
	out := h.Admin("POST", "/groups/billing/dead-letters/redrive", map[string]any{}, 200)
	require.JSONEq(t, `{"redriven":1}`, string(out))
	r.WaitCount(1, 20*time.Second)
	require.Len(t, r.Get(msg.ID), 1, "delivered with the origin webhook-id")
	out = h.Admin("POST", "/groups/billing/dead-letters/redrive", map[string]any{}, 200)
	require.JSONEq(t, `{"redriven":0}`, string(out), "a second redrive does nothing")
	time.Sleep(1500 * time.Millisecond) // past a retry's 1 s: proves the second redrive sent nothing
	require.Len(t, r.Get(msg.ID), 1)
}

// TestPartialFailure: a 2xx naming failed ids retries only those; a malformed
// partial body fails the whole batch.
func TestPartialFailure(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("p", 1)
	r := heraldtest.NewReceiver(t)
	var calls atomic.Int32
	var failID atomic.Value
	got := map[string]int{}
	var mu sync.Mutex
	r.Respond = func(d heraldtest.Delivery) int {
		var env struct {
			Messages []struct{ ID string } `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(d.Body, &env))
		mu.Lock()
		for _, m := range env.Messages {
			got[m.ID]++
		}
		mu.Unlock()
		calls.Add(1)
		return 200
	}
	// The receiver writes the partial-failure body through a wrapping handler.
	r.Body = func(d heraldtest.Delivery) string {
		if calls.Load() == 1 {
			return fmt.Sprintf(`{"failed":[%q]}`, failID.Load().(string))
		}
		return ""
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 10, "retry_schedule": []int{1},
		"subscriptions": []map[string]any{{"topic": "p"}}}))
	msgs := h.Publish(h.CreateAPIKey("p"), "p", map[string]any{"body": 1}, map[string]any{"body": 2}, map[string]any{"body": 3})
	failID.Store(msgs[1].ID)
	require.Eventually(t, func() bool { return calls.Load() >= 2 }, 20*time.Second, 20*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // proves no third POST follows: nothing signals an absence
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]int{msgs[0].ID: 1, msgs[1].ID: 2, msgs[2].ID: 1}, got, "only the listed id was sent again")
}

// TestPartialFailureMalformed: a 2xx whose "failed" is not a list of ids fails the
// whole batch: every message is sent again.
func TestPartialFailureMalformed(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("p", 1)
	r := heraldtest.NewReceiver(t)
	var calls atomic.Int32
	got := map[string]int{}
	var mu sync.Mutex
	r.Respond = func(d heraldtest.Delivery) int {
		var env struct {
			Messages []struct{ ID string } `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(d.Body, &env))
		mu.Lock()
		for _, m := range env.Messages {
			got[m.ID]++
		}
		mu.Unlock()
		calls.Add(1)
		return 200
	}
	r.Body = func(heraldtest.Delivery) string {
		if calls.Load() == 1 {
			return `{"failed":"all of them?"}`
		}
		return ""
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 10, "retry_schedule": []int{1},
		"subscriptions": []map[string]any{{"topic": "p"}}}))
	msgs := h.Publish(h.CreateAPIKey("p"), "p", map[string]any{"body": 1}, map[string]any{"body": 2})
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got[msgs[0].ID] == 2 && got[msgs[1].ID] == 2
	}, 20*time.Second, 20*time.Millisecond, "both messages sent again")
	as := attemptsOf(t, h, msgs[0].Queue, msgs[0].Offset, 2)
	require.Equal(t, "partial_malformed", as[0].ErrorClass)
}
