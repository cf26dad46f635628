package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
)

// TestInvalidUTF8NotSent: a string that is not UTF-8 is an ErrInvalidUTF8 naming the
// field, and nothing is sent (encoding/json would have sent U+FFFD instead).
func TestInvalidUTF8NotSent(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	c := client.New(srv.URL, client.WithToken("t"), client.WithAPIKey("hk_a_b"), client.WithRetries(0, 0))
	ctx := context.Background()
	_, err := c.CreateAPIKey(ctx, "ok\xc3(", []string{"orders"})
	require.ErrorIs(t, err, client.ErrInvalidUTF8)
	require.ErrorIs(t, err, client.ErrInvalid)
	require.ErrorContains(t, err, "/name")
	_, err = c.CreateGroupRaw(ctx, map[string]any{"name": "g", "endpoint_headers": map[string]string{"x-api-key": "ok\xc3("}})
	require.ErrorContains(t, err, "/endpoint_headers/x-api-key")
	for _, m := range []client.Message{
		{Body: []byte(`1`), ContentType: "application/json", Tag: "ok\xc3("},
		{Body: []byte(`1`), ContentType: "application/json", Key: "ok\xc3("},
		{Body: []byte(`1`), ContentType: "application/json", Headers: map[string]string{"x-a": "ok\xc3("}},
		{Body: []byte(`1`), ContentType: "application/json", Headers: map[string]string{"x-\xff": "v"}},
	} {
		_, err = c.Publish(ctx, "orders", []client.Message{m})
		require.ErrorIs(t, err, client.ErrInvalidUTF8)
	}
	require.Zero(t, calls.Load(), "nothing was sent")
	_, err = c.Publish(ctx, "orders", []client.Message{{Body: []byte("\xff"), ContentType: "application/octet-stream", Tag: "é"}})
	require.Error(t, err)
	require.NotErrorIs(t, err, client.ErrInvalidUTF8, "bytes bodies are not text")
	require.Equal(t, int64(1), calls.Load())
}
