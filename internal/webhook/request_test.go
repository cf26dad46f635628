package webhook

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
)

// capture starts a loopback endpoint answering status with body and returns it
// with the requests it got.
func capture(t *testing.T, status int, body string) (*httptest.Server, chan *http.Request) {
	t.Helper()
	got := make(chan *http.Request, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		got <- r
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// TestSendHeaders: a lone message's POST carries every Herald header, its tag, key,
// attempt and forwardable publisher headers, the group's static headers and Basic
// credentials, and a Standard Webhooks signature per secret that the official
// library verifies.
func TestSendHeaders(t *testing.T) {
	t.Parallel()
	srv, got := capture(t, 204, "")
	current, previous := signing.NewSecret(), signing.NewSecret()
	var signers []*signing.Signer
	for _, s := range []string{current, previous} {
		sg, err := signing.NewSigner(s)
		require.NoError(t, err)
		signers = append(signers, sg)
	}
	p := &Post{URL: srv.URL + "/hook", Body: []byte(`{"a":1}`), ContentType: "application/json", ID: "msg_3_9", Group: "billing",
		Topic: "orders", TraceID: "0af7651916cd43dd8448eb211c80319c",
		Message: &Message{Tag: "created", Key: "cust-1", Attempt: 3,
			Headers: map[string]string{"x-request-id": "r1", "x-forwarded-for": "10.0.0.1", models.HeaderOriginTopic: "t", "y-other": "no"}},
		Auth:    models.EndpointAuth{Headers: map[string]string{"x-api-key": "k", "herald-group": "spoofed"}, Basic: &models.BasicAuth{Username: "u", Password: "p"}},
		Signers: signers}
	client := NewClient(ssrf.Guard{AllowPrivate: true})
	defer client.CloseIdleConnections()
	res, err := Send(context.Background(), client, p, 5*time.Second, 1<<10)
	require.NoError(t, err)
	require.Equal(t, KindDelivered, res.Kind)
	r := <-got
	h := r.Header
	for k, want := range map[string]string{
		"Content-Type": "application/json", "User-Agent": UserAgent, "Herald-Topic": "orders", "Herald-Group": "billing",
		"Herald-Tag": "created", "Herald-Key": "cust-1", "Herald-Attempt": "3", "Webhook-Id": "msg_3_9",
		"X-Request-Id": "r1", "X-Api-Key": "k", "Herald-Origin-Topic": "t",
	} {
		require.Equal(t, want, h.Get(k), k)
	}
	for _, k := range []string{"X-Forwarded-For", "Y-Other", "Herald-Test", "Accept-Encoding"} {
		require.NotContains(t, h, k)
	}
	require.Regexp(t, `^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$`, h.Get("Traceparent"))
	u, pw, ok := r.BasicAuth()
	require.True(t, ok)
	require.Equal(t, []string{"u", "p"}, []string{u, pw})
	require.Len(t, strings.Fields(h.Get("Webhook-Signature")), 2)
	body, _ := io.ReadAll(r.Body)
	for _, s := range []string{current, previous} {
		wh, err := standardwebhooks.NewWebhook(s)
		require.NoError(t, err)
		require.NoError(t, wh.Verify(body, h), "signed with every secret")
	}
}

// TestSendBatchAndTest: a batch carries no per-message headers; a test send says so
// and starts its own trace; a push token is a bearer signed for the webhook-id and
// the webhook-timestamp.
func TestSendBatchAndTest(t *testing.T) {
	t.Parallel()
	srv, got := capture(t, 200, "")
	var gotID string
	var gotIAT time.Time
	p := &Post{URL: srv.URL, Body: []byte(`{"messages":[]}`), ContentType: "application/json", ID: "bat_x", Group: "g", Topic: "t", Test: true,
		PushToken: func(_ context.Context, id string, iat time.Time) (string, error) {
			gotID, gotIAT = id, iat
			return "jwt", nil
		}}
	client := NewClient(ssrf.Guard{AllowPrivate: true})
	defer client.CloseIdleConnections()
	_, err := Send(context.Background(), client, p, 5*time.Second, 1<<10)
	require.NoError(t, err)
	h := (<-got).Header
	for _, k := range []string{"Herald-Tag", "Herald-Key", "Herald-Attempt"} {
		require.NotContains(t, h, k)
	}
	require.Equal(t, "true", h.Get("Herald-Test"))
	require.Equal(t, "Bearer jwt", h.Get("Authorization"))
	require.Equal(t, "bat_x", gotID)
	require.Equal(t, h.Get("Webhook-Timestamp"), strconv.FormatInt(gotIAT.Unix(), 10))
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, h.Get("Traceparent"))
}

// TestSendErrors: a push token that cannot be made or a URL no request can be made
// for is an error and nothing is sent; answers are read as far as the caps allow.
func TestSendErrors(t *testing.T) {
	t.Parallel()
	srv, got := capture(t, 500, strings.Repeat("e", 5000))
	client := NewClient(ssrf.Guard{AllowPrivate: true})
	defer client.CloseIdleConnections()
	broken := errors.New("no key")
	_, err := Send(context.Background(), client, &Post{URL: srv.URL, ID: "x",
		PushToken: func(context.Context, string, time.Time) (string, error) { return "", broken }}, time.Second, 1<<10)
	require.ErrorIs(t, err, broken)
	_, err = Send(context.Background(), client, &Post{URL: "http://bad host/", ID: "x"}, time.Second, 1<<10)
	require.ErrorIs(t, err, ErrEndpointURL)
	require.Empty(t, got, "nothing was sent")
	res, err := Send(context.Background(), client, &Post{URL: srv.URL, ID: "x"}, 5*time.Second, 1<<10)
	require.NoError(t, err)
	require.Equal(t, Outcome{Kind: KindFailed, Status: 500, Class: delivery.ClassHTTPStatus}, res.Outcome)
	require.Len(t, res.Head, ExcerptBytes, "a failure keeps a 4 KiB excerpt")
	require.Positive(t, res.Latency)
}
