package api_test

import (
	"database/sql"
	"fmt"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestMethodNotAllowedAndHead: a known path asked with a wrong method answers 405
// with Allow (before any credentials are checked), every GET also answers HEAD,
// and an unknown path stays 404.
func TestMethodNotAllowedAndHead(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	tok := h.Token()

	code, body, hdr := h.Do("DELETE", "/api/v1/topics", tok, nil)
	require.Equal(t, 405, code, string(body))
	require.Equal(t, "GET, HEAD, POST", hdr.Get("Allow"))
	require.Contains(t, string(body), "method-not-allowed")
	code, _, hdr = h.Do("PUT", "/healthz", "", nil)
	require.Equal(t, 405, code)
	require.Equal(t, "GET, HEAD", hdr.Get("Allow"))
	code, _, hdr = h.Do("GET", "/v1/topics/orders/messages", "", nil)
	require.Equal(t, 405, code)
	require.Equal(t, "POST", hdr.Get("Allow"))

	code, body, _ = h.Do("HEAD", "/healthz", "", nil)
	require.Equal(t, 200, code)
	require.Empty(t, body)
	h.CreateTopic("orders", 1)
	code, body, hdr = h.Do("HEAD", "/api/v1/topics/orders", tok, nil)
	require.Equal(t, 200, code)
	require.Empty(t, body)
	require.Equal(t, "application/json", hdr.Get("Content-Type"))
	code, _, _ = h.Do("HEAD", "/api/v1/topics/orders", "", nil)
	require.Equal(t, 401, code, "HEAD needs the same credentials as GET")

	code, _, _ = h.Do("GET", "/no/such/path", "", nil)
	require.Equal(t, 404, code)
}

// TestTokenRefresh: a valid JWT is traded for a new working one; a revoked one
// is refused.
func TestTokenRefresh(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	code, body, _ := h.Do("POST", "/api/v1/auth/refresh", h.Token(), nil)
	require.Equal(t, 200, code, string(body))
	fresh := decode[struct {
		Token     string `json:"token"`
		ExpiresAt string `json:"expires_at"`
	}](t, body)
	require.NotEmpty(t, fresh.ExpiresAt)
	code, _, _ = h.Do("GET", "/api/v1/topics", fresh.Token, nil)
	require.Equal(t, 200, code)

	h.Admin("POST", "/users/1/revoke-tokens", nil, 204)
	code, _, _ = h.Do("POST", "/api/v1/auth/refresh", fresh.Token, nil)
	require.Equal(t, 401, code, "a revoked token cannot be refreshed")
	code, _, _ = h.Do("POST", "/api/v1/auth/refresh", "", nil)
	require.Equal(t, 401, code)
}

// TestPublishEveryQueueReadOnly: keyless messages on a topic whose queues are all
// read-only (the API refuses that change, so the test sets it in the table, as a
// migration of the queues' node would) answer 503 queue-unavailable with
// Retry-After, and nothing is stored; so does a keyed message whose queue is
// read-only.
func TestPublishEveryQueueReadOnly(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("frozen", 2)
	key := h.CreateAPIKey("frozen")
	tp := decode[struct{ Queues []struct{ ID int64 } }](t, h.Admin("GET", "/topics/frozen", nil, 200))

	db, err := sql.Open("mysql", h.DSN)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("UPDATE queues SET state = 'read_only' WHERE id IN (?, ?)", tp.Queues[0].ID, tp.Queues[1].ID)
	require.NoError(t, err)
	code, body, hdr := h.Do("POST", "/v1/topics/frozen/messages", key, map[string]any{"messages": []map[string]any{{"body": map[string]int{"n": 1}}}})
	require.Equal(t, 503, code, string(body))
	require.Contains(t, string(body), "queue-unavailable")
	require.Equal(t, "5", hdr.Get("Retry-After"))
	for _, q := range decode[struct {
		Queues []struct {
			MaxOffset int64 `json:"max_offset"`
		}
	}](t, h.Admin("GET", "/topics/frozen", nil, 200)).Queues {
		require.Zero(t, q.MaxOffset, "nothing stored")
	}

	h.Admin("PATCH", "/topics/frozen", map[string]any{"read_only_queues": []int64{tp.Queues[0].ID}}, 200)
	for k := 0; ; k++ { // a key whose slot maps to the read-only queue
		code, _, hdr := h.Do("POST", "/v1/topics/frozen/messages", key, map[string]any{"messages": []map[string]any{{"body": 1, "key": fmt.Sprint("k", k)}}})
		if code == 503 {
			require.Equal(t, "5", hdr.Get("Retry-After"))
			break
		}
		require.Equal(t, 201, code)
		require.Less(t, k, 64)
	}
}
