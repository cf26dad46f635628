package client_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/heraldtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/go-sql-driver/mysql.(*mysqlConn).startWatcher.func1"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"), goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}

// admin returns a client logged into a fresh Herald.
func admin(t *testing.T) (*heraldtest.Herald, *client.Client) {
	h := heraldtest.StartHerald(t, nil)
	c := client.New(h.BaseURL)
	_, err := c.Login(context.Background(), heraldtest.AdminUser, heraldtest.AdminPassword)
	require.NoError(t, err)
	return h, c
}

// storedCount is how many messages the topic's queues hold.
func storedCount(t *testing.T, c *client.Client, topic string) int64 {
	tp, err := c.GetTopic(context.Background(), topic)
	require.NoError(t, err)
	var n int64
	for _, q := range tp.Queues {
		n += q.MaxOffset
	}
	return n
}

// TestPublishRetriesAreIdempotent: a proxy forwards the first publish to Herald
// but loses the answer (502), then asks the client to slow down (429 with
// Retry-After) before letting the third try through. The retries carry the same
// Idempotency-Key and body, so Herald stores the messages once and replays its
// first answer.
func TestPublishRetriesAreIdempotent(t *testing.T) {
	t.Parallel()
	h, c := admin(t)
	ctx := context.Background()
	_, err := c.CreateTopic(ctx, client.TopicSpec{Name: "orders", Queues: 2})
	require.NoError(t, err)
	key, err := c.CreateAPIKey(ctx, "pub", []string{"orders"})
	require.NoError(t, err)

	target, _ := url.Parse(h.BaseURL)
	forward := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var keys []string
	var replayed string
	var calls atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		switch n {
		case 1: // stored, but the answer is lost
			rec := httptest.NewRecorder()
			forward.ServeHTTP(rec, r)
			require.Equal(t, 201, rec.Code, rec.Body.String())
			w.WriteHeader(http.StatusBadGateway)
		case 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			rec := httptest.NewRecorder()
			forward.ServeHTTP(rec, r)
			mu.Lock()
			replayed = rec.Header().Get("Idempotent-Replayed")
			mu.Unlock()
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		}
	}))
	defer proxy.Close()

	pub := client.New(proxy.URL, client.WithAPIKey(key.Key), client.WithRetries(3, 10*time.Millisecond))
	start := time.Now()
	ids, err := pub.Publish(ctx, "orders", []client.Message{
		{Body: []byte(`{"n":1}`), Tag: "created", Key: "o-1"},
		{Body: []byte{0, 1, 2}, ContentType: "application/octet-stream"},
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "Retry-After is honoured")
	require.Len(t, ids, 2)
	require.EqualValues(t, 3, calls.Load())
	require.Equal(t, "true", replayed, "the third try is answered from the stored result")
	require.Len(t, keys, 3)
	require.NotEmpty(t, keys[0])
	require.Equal(t, []string{keys[0], keys[0], keys[0]}, keys, "one key for every try")
	require.EqualValues(t, 2, storedCount(t, c, "orders"), "stored once")

	// A refusal is not retried.
	calls.Store(100)
	_, err = client.New(h.BaseURL, client.WithAPIKey(key.Key)).Publish(ctx, "nope", []client.Message{{Body: []byte(`1`)}})
	require.ErrorIs(t, err, client.ErrForbidden, "the key may not publish there")
	_, err = client.New(h.BaseURL, client.WithAPIKey(key.Key)).Publish(ctx, "orders", nil)
	require.ErrorIs(t, err, client.ErrInvalid)
	var he *client.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, "validation", he.Kind)
}

// TestPublishGivesUpAfterRetries: a server that always answers 503 is tried
// 1 + retries times, and the last answer is returned.
func TestPublishGivesUpAfterRetries(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(503)
		_, _ = io.WriteString(w, `{"type":"https://herald.dev/problems/unavailable","title":"t","status":503,"detail":"down"}`)
	}))
	defer srv.Close()
	_, err := client.New(srv.URL, client.WithRetries(2, time.Millisecond)).Publish(context.Background(), "t", []client.Message{{Body: []byte(`1`)}})
	require.ErrorIs(t, err, client.ErrUnavailable)
	require.EqualValues(t, 3, calls.Load())
}

// TestAdminCalls: the control-plane calls the CLI uses, against a real Herald,
// with errors that match the client's sentinels.
func TestAdminCalls(t *testing.T) {
	t.Parallel()
	h, c := admin(t)
	ctx := context.Background()
	_, err := client.New(h.BaseURL).ListTopics(ctx, client.ListOptions{})
	require.ErrorIs(t, err, client.ErrUnauthorized)

	_, err = c.CreateTopic(ctx, client.TopicSpec{Name: "orders", Queues: 2})
	require.NoError(t, err)
	_, err = c.CreateTopic(ctx, client.TopicSpec{Name: "orders", Queues: 2})
	require.ErrorIs(t, err, client.ErrConflict)
	_, err = c.GetTopic(ctx, "nope")
	require.ErrorIs(t, err, client.ErrNotFound)
	three := 3
	tp, err := c.PatchTopic(ctx, "orders", client.TopicPatch{Queues: &three})
	require.NoError(t, err)
	require.Len(t, tp.Queues, 3)
	page, err := c.ListTopics(ctx, client.ListOptions{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, "orders", page.Items[0].Name)

	recv := heraldtest.NewReceiver(t)
	g, err := c.CreateGroup(ctx, client.GroupSpec{Name: "billing", GroupSettings: client.GroupSettings{
		EndpointURL: recv.URL, Subscriptions: []client.Subscription{{Topic: "orders"}}, ConsumeFrom: "earliest"}})
	require.NoError(t, err)
	require.NotEmpty(t, g.SigningSecret)
	_, err = c.CreateGroup(ctx, client.GroupSpec{Name: "bad", GroupSettings: client.GroupSettings{EndpointURL: "ftp://x"}})
	require.ErrorIs(t, err, client.ErrInvalid)
	g, err = c.PatchGroup(ctx, "billing", map[string]any{"rate_limit": 25})
	require.NoError(t, err)
	require.Equal(t, 25, g.RateLimit)
	g, err = c.PauseGroup(ctx, "billing")
	require.NoError(t, err)
	require.Equal(t, "paused", g.Status)
	g, err = c.ResumeGroup(ctx, "billing")
	require.NoError(t, err)
	require.Equal(t, "running", g.Status)
	st, err := c.GroupStats(ctx, "billing")
	require.NoError(t, err)
	require.Equal(t, "billing", st.Group)
	cs, err := c.ResetOffsets(ctx, "billing", client.OffsetReset{To: "latest"})
	require.NoError(t, err)
	require.Len(t, cs, 3)
	_, err = c.ResetOffsets(ctx, "billing", client.OffsetReset{To: "yesterday"})
	require.ErrorIs(t, err, client.ErrInvalid)
	gs, err := c.ListGroups(ctx, client.ListOptions{})
	require.NoError(t, err)
	require.Len(t, gs.Items, 1)

	dl, err := c.ListDeadLetters(ctx, "billing", "pending", client.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, dl.Items)
	n, err := c.RedriveDeadLetters(ctx, "billing", client.DeadLetterSelection{})
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = c.PurgeDeadLetters(ctx, "billing", client.DeadLetterSelection{From: time.Now().Add(-time.Hour), To: time.Now()})
	require.NoError(t, err)
	require.Zero(t, n)

	k, err := c.CreateAPIKey(ctx, "ci", []string{"orders"})
	require.NoError(t, err)
	require.NotEmpty(t, k.Key)
	k, err = c.RevokeAPIKey(ctx, k.ID)
	require.NoError(t, err)
	require.NotNil(t, k.RevokedAt)
	_, err = c.RevokeAPIKey(ctx, 999999)
	require.ErrorIs(t, err, client.ErrNotFound)

	_, err = c.DeleteTopic(ctx, "orders", false)
	require.ErrorIs(t, err, client.ErrConflict, "billing subscribes to it")
	tok, err := c.Refresh(ctx)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(time.Hour), tok.ExpiresAt, time.Minute)
	_, err = c.ListAPIKeys(ctx, client.ListOptions{})
	require.NoError(t, err, "the refreshed token works")
}

// TestHandlerReceivesRealDeliveries: client.Handler verifies Herald's signed
// batch deliveries, parses the envelope, and a partial failure it answers makes
// Herald resend only the failed message, with its id kept and attempt 2.
func TestHandlerReceivesRealDeliveries(t *testing.T) {
	t.Parallel()
	h, c := admin(t)
	ctx := context.Background()
	_, err := c.CreateTopic(ctx, client.TopicSpec{Name: "orders", Queues: 1})
	require.NoError(t, err)

	var verifier atomic.Pointer[client.Verifier]
	var mu sync.Mutex
	got := map[string][]client.Delivered{}
	var failOnce string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client.Handler(verifier.Load(), func(_ context.Context, msgs []client.Delivered) ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			var failed []string
			for _, m := range msgs {
				got[m.ID] = append(got[m.ID], m)
				if string(m.Body) == `{"n":2}` && len(got[m.ID]) == 1 {
					failOnce = m.ID
					failed = append(failed, m.ID)
				}
			}
			return failed, nil
		}).ServeHTTP(w, r)
	}))
	defer srv.Close()

	g, err := c.CreateGroup(ctx, client.GroupSpec{Name: "billing", GroupSettings: client.GroupSettings{
		EndpointURL: srv.URL, Subscriptions: []client.Subscription{{Topic: "orders"}}, ConsumeFrom: "earliest",
		BatchSize: 10, BatchWindowMS: 200, RetrySchedule: []int{1}}})
	require.NoError(t, err)
	v, err := client.NewVerifier(g.SigningSecret)
	require.NoError(t, err)
	verifier.Store(v)

	key, err := c.CreateAPIKey(ctx, "pub", []string{"orders"})
	require.NoError(t, err)
	pub := client.New(h.BaseURL, client.WithAPIKey(key.Key))
	m1, _ := client.JSON(map[string]int{"n": 1})
	m1.Tag, m1.Key = "created", "o-1"
	m1.Headers = map[string]string{"x-source": "test"}
	m2, _ := client.JSON(map[string]int{"n": 2})
	ids, err := pub.Publish(ctx, "orders", []client.Message{m1, m2, {Body: []byte("plain text"), ContentType: "text/plain"}})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 3 && failOnce != "" && len(got[failOnce]) == 2
	}, 20*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, ids[1].ID, failOnce)
	for _, id := range []string{ids[0].ID, ids[2].ID} {
		require.Len(t, got[id], 1, "a message not listed as failed is not resent")
	}
	first := got[ids[0].ID][0]
	require.Equal(t, "orders", first.Topic)
	require.Equal(t, "created", first.Tag)
	require.Equal(t, "o-1", first.Key)
	require.Equal(t, "test", first.Headers["x-source"])
	require.JSONEq(t, `{"n":1}`, string(first.Body))
	require.Equal(t, ids[0].Offset, first.Offset)
	require.WithinDuration(t, time.Now(), first.PublishedAt, time.Minute)
	require.Equal(t, []byte("plain text"), got[ids[2].ID][0].Body, "body_base64 decoded")
	require.Equal(t, "text/plain", got[ids[2].ID][0].ContentType)
	require.Equal(t, 2, got[failOnce][1].Attempt)
}

// TestHandlerRefusesBadSignatures: an unsigned or tampered request answers 401
// and never reaches the function.
func TestHandlerRefusesBadSignatures(t *testing.T) {
	t.Parallel()
	v, err := client.NewVerifier(secret)
	require.NoError(t, err)
	called := false
	srv := httptest.NewServer(client.Handler(v, func(context.Context, []client.Delivered) ([]string, error) {
		called = true
		return nil, nil
	}))
	defer srv.Close()
	body := []byte(`{"messages":[]}`)
	req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader(body))
	for k, vs := range signed("bat_x", time.Now(), body) {
		req.Header[k] = vs
	}
	req.Header.Set("webhook-signature", "v1,AAAA")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 401, resp.StatusCode)
	require.False(t, called)

	req, _ = http.NewRequest("POST", srv.URL, bytes.NewReader(body))
	for k, vs := range signed("bat_x", time.Now(), body) {
		req.Header[k] = vs
	}
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 204, resp.StatusCode)
	require.True(t, called)
}
