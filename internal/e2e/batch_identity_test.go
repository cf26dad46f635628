package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/metrics"
)

// batchPost is one POST a batch receiver saw.
type batchPost struct {
	webhookID string
	members   []string
}

// TestBatchIdentity: a batch that failed whole is re-sent under the same bat_ id; a
// partial failure is logged as a failed attempt (partial_failure, the status and an
// excerpt) for the named message only; the batch id can be looked up with its
// members and attempts; the retried subset carries the same per-message ids.
func TestBatchIdentity(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("b", 1)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	var posts []batchPost
	var failID string
	r.Respond = func(d heraldtest.Delivery) int {
		var env struct {
			Messages []struct{ ID string } `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(d.Body, &env))
		p := batchPost{webhookID: d.ID}
		for _, m := range env.Messages {
			p.members = append(p.members, m.ID)
		}
		mu.Lock()
		defer mu.Unlock()
		posts = append(posts, p)
		if len(posts) == 1 {
			return 500
		}
		return 200
	}
	r.Body = func(heraldtest.Delivery) string {
		mu.Lock()
		defer mu.Unlock()
		if len(posts) == 2 {
			return fmt.Sprintf(`{"failed":[%q]}`, failID)
		}
		return ""
	}
	group := heraldtest.RandomName("bi")
	r.SetSecret(h.CreateGroup(map[string]any{"name": group, "endpoint_url": r.URL, "batch_size": 3, "retry_schedule": []int{1},
		"subscriptions": []map[string]any{{"topic": "b"}}}))
	key := h.CreateAPIKey("b")
	mu.Lock()
	msgs := h.Publish(key, "b", map[string]any{"body": 1}, map[string]any{"body": 2}, map[string]any{"body": 3})
	failID = msgs[1].ID
	mu.Unlock()
	all := []string{msgs[0].ID, msgs[1].ID, msgs[2].ID}

	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(posts) >= 3 }, 20*time.Second, 10*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // proves no fourth POST follows: nothing signals an absence
	mu.Lock()
	got := append([]batchPost(nil), posts...)
	mu.Unlock()
	require.Len(t, got, 3, "one failed POST, its whole re-send, the retried subset")
	batch := got[0].webhookID
	require.True(t, strings.HasPrefix(batch, "bat_"), batch)
	require.Equal(t, all, got[0].members)
	require.Equal(t, batch, got[1].webhookID, "the re-sent batch keeps its id")
	require.Equal(t, all, got[1].members)
	require.Equal(t, []string{msgs[1].ID}, got[2].members, "only the named message is retried, under its own msg_ id")

	type attempt struct {
		Message         string `json:"message"`
		WebhookID       string `json:"webhook_id"`
		Attempt         int    `json:"attempt"`
		Status          int    `json:"status"`
		ErrorClass      string `json:"error_class"`
		ResponseExcerpt string `json:"response_excerpt"`
	}
	var detail struct {
		ID               string    `json:"id"`
		Group            string    `json:"group"`
		Messages         []string  `json:"messages"`
		DeliveryAttempts []attempt `json:"delivery_attempts"`
	}
	require.Eventually(t, func() bool {
		code, body, _ := h.Do("GET", "/api/v1/messages/"+batch, h.Token(), nil)
		require.NotEqual(t, 422, code, string(body))
		return code == 200 && json.Unmarshal(body, &detail) == nil && len(detail.DeliveryAttempts) == 6
	}, 10*time.Second, 50*time.Millisecond, "the batch's 6 attempt rows")
	_, raw, _ := h.Do("GET", "/api/v1/messages/"+batch, h.Token(), nil)
	spec, err := openapi3.NewLoader().LoadFromData(api.OpenAPI())
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.NoError(t, spec.Components.Schemas["BatchDetail"].Value.VisitJSON(doc), "the answer matches openapi.yaml's BatchDetail")
	require.Equal(t, batch, detail.ID)
	require.Equal(t, group, detail.Group)
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.Failed.WithLabelValues(group, "partial_failure")), "failure counter class")
	require.Equal(t, all, detail.Messages)
	for _, a := range detail.DeliveryAttempts {
		require.Equal(t, batch, a.WebhookID)
		switch {
		case a.Attempt == 1:
			require.Equal(t, 500, a.Status, "%+v", a)
			require.Equal(t, "http_status", a.ErrorClass, "%+v", a)
		case a.Message == msgs[1].ID:
			require.Equal(t, 200, a.Status, "%+v", a)
			require.Equal(t, "partial_failure", a.ErrorClass, "%+v", a)
			require.Contains(t, a.ResponseExcerpt, failID)
		default:
			require.Equal(t, 2, a.Attempt, "%+v", a)
			require.Empty(t, a.ErrorClass, "%+v", a)
		}
	}

	code, _, _ := h.Do("GET", "/api/v1/messages/bat_aaaaaaaaaaaaaaaaaaaaaaaaaa", h.Token(), nil)
	require.Equal(t, 404, code, "an unknown batch id")
}

// TestBatchesResentApart: two POSTs of one job fail (one partly, one whole) and their
// retries come due together (the group was paused meanwhile); the retry job still
// sends each failed POST's messages apart, so the whole failure is re-sent under its
// bat_ id with the same members.
func TestBatchesResentApart(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("b", 1)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	var posts []batchPost
	var failID string
	answer := map[string]int{} // webhook-id → status of its first POST
	r.Respond = func(d heraldtest.Delivery) int {
		var env struct {
			Messages []struct{ ID string } `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(d.Body, &env))
		p := batchPost{webhookID: d.ID}
		for _, m := range env.Messages {
			p.members = append(p.members, m.ID)
		}
		mu.Lock()
		defer mu.Unlock()
		posts = append(posts, p)
		if len(posts) > 2 {
			return 204
		}
		if p.members[0] == failID {
			answer[d.ID] = 500 // the second batch fails whole
			return 500
		}
		answer[d.ID] = 200
		return 200
	}
	r.Body = func(d heraldtest.Delivery) string {
		mu.Lock()
		defer mu.Unlock()
		if answer[d.ID] == 200 && len(posts) <= 2 {
			return fmt.Sprintf(`{"failed":[%q]}`, posts[len(posts)-1].members[1])
		}
		return ""
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 3, "max_in_flight": 1, "retry_schedule": []int{1},
		"subscriptions": []map[string]any{{"topic": "b"}}}))
	h.Admin("POST", "/groups/g/pause", nil, 200)
	key := h.CreateAPIKey("b")
	mu.Lock()
	msgs := h.Publish(key, "b", map[string]any{"body": 1}, map[string]any{"body": 2}, map[string]any{"body": 3},
		map[string]any{"body": 4}, map[string]any{"body": 5}, map[string]any{"body": 6})
	failID = msgs[3].ID
	mu.Unlock()
	h.Admin("POST", "/groups/g/resume", nil, 200)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(posts) >= 2 }, 20*time.Second, 10*time.Millisecond)
	h.Admin("POST", "/groups/g/pause", nil, 200)
	waitRetriesDue(t, h, 4) // the failed batch's three rows and the partial failure's one come due while paused
	h.Admin("POST", "/groups/g/resume", nil, 200)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(posts) >= 4 }, 20*time.Second, 10*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // proves no fifth POST follows: nothing signals an absence
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, posts, 4, "two first POSTs, two retries: %+v", posts)
	var whole batchPost
	for _, p := range posts[:2] {
		if p.members[0] == failID {
			whole = p
		}
	}
	require.Equal(t, []string{msgs[3].ID, msgs[4].ID, msgs[5].ID}, whole.members)
	var resent []batchPost
	for _, p := range posts[2:] {
		if p.webhookID == whole.webhookID {
			resent = append(resent, p)
		}
	}
	require.Len(t, resent, 1, "the whole failure is re-sent under its bat_ id: %+v", posts)
	require.Equal(t, whole.members, resent[0].members)
}
