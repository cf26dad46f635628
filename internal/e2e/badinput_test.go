package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
)

type problemBody struct {
	Type   string `json:"type"`
	Status int    `json:"status"`
	Errors []struct {
		Pointer string `json:"pointer"`
	} `json:"errors"`
}

func requireProblem(t *testing.T, code int, body []byte, hdr http.Header, wantStatus int, wantKind string) problemBody {
	t.Helper()
	require.Equal(t, wantStatus, code, string(body))
	require.Equal(t, "application/problem+json", hdr.Get("Content-Type"))
	var p problemBody
	require.NoError(t, json.Unmarshal(body, &p), string(body))
	require.Equal(t, api.ProblemBase+wantKind, p.Type, string(body))
	require.Equal(t, wantStatus, p.Status)
	return p
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// TestPublishBadInput sends every limit and naming rule a violation and expects the
// documented problem+json status and type; nothing of a refused request is stored.
func TestPublishBadInput(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 2)
	h.CreateTopic("other", 1)
	key := h.CreateAPIKey("orders")
	big := strings.Repeat("a", api.MaxMessageBytes+1)
	many := make([]map[string]any, api.MaxMessagesPerReq+1)
	for i := range many {
		many[i] = map[string]any{"body": i}
	}
	bomb := gzipped(append([]byte(`{"messages":[{"body":"`), append(bytes.Repeat([]byte("0"), api.MaxRequestBytes+10), []byte(`"}]}`)...)...))
	cases := []struct {
		name    string
		topic   string
		key     string
		body    any
		headers []string
		status  int
		kind    string
		pointer string
	}{
		{"no key", "orders", "", map[string]any{}, nil, 401, "unauthorized", ""},
		{"wrong key", "orders", "hk_abc_def", map[string]any{}, nil, 401, "unauthorized", ""},
		{"not a key", "orders", "Basic xyz", map[string]any{}, nil, 401, "unauthorized", ""},
		{"key out of scope", "other", key, map[string]any{"messages": []any{map[string]any{"body": 1}}}, nil, 403, "forbidden", ""},
		{"dead-letter topic", "orders.dlq", key, map[string]any{"messages": []any{map[string]any{"body": 1}}}, nil, 403, "forbidden", ""},
		{"unknown topic", "missing", h.CreateAPIKey("*"), map[string]any{"messages": []any{map[string]any{"body": 1}}}, nil, 404, "topic-not-found", ""},
		{"bad topic name", "Bad%20Name", key, map[string]any{}, nil, 404, "topic-not-found", ""},
		{"malformed json", "orders", key, []byte(`{"messages":[`), nil, 400, "malformed-request", ""},
		{"trailing data", "orders", key, []byte(`{"messages":[{"body":1}]} {}`), nil, 400, "malformed-request", ""},
		{"wrong content type", "orders", key, []byte(`{"messages":[{"body":1}]}`), []string{"Content-Type", "text/plain"}, 415, "unsupported-media-type", ""},
		{"unknown encoding", "orders", key, []byte(`{}`), []string{"Content-Encoding", "br"}, 415, "unsupported-media-type", ""},
		{"gzip bomb", "orders", key, bomb, []string{"Content-Encoding", "gzip"}, 413, "payload-too-large", ""},
		{"message too large", "orders", key, map[string]any{"messages": []any{map[string]any{"body": big}}}, nil, 413, "payload-too-large", ""},
		{"request too large", "orders", key, []byte(`{"messages":[{"body":"` + strings.Repeat("a", api.MaxRequestBytes) + `"}]}`), nil, 413, "payload-too-large", ""},
		{"too many messages", "orders", key, map[string]any{"messages": many}, nil, 413, "payload-too-large", ""},
		{"no messages", "orders", key, map[string]any{"messages": []any{}}, nil, 422, "validation", "/messages"},
		{"unknown field", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "colour": "red"}}}, nil, 422, "unknown-field", ""},
		{"wrong type", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "tag": 7}}}, nil, 422, "validation", ""},
		{"no body", "orders", key, map[string]any{"messages": []any{map[string]any{"tag": "x"}}}, nil, 422, "validation", "/messages/0/body"},
		{"both bodies", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "body_base64": "AA=="}}}, nil, 422, "validation", "/messages/0"},
		{"bad base64", "orders", key, map[string]any{"messages": []any{map[string]any{"body_base64": "!!"}}}, nil, 422, "validation", "/messages/0/body_base64"},
		{"long tag", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "tag": strings.Repeat("t", 256)}}}, nil, 422, "validation", "/messages/0/tag"},
		{"control char in key", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "key": "a\x00b"}}}, nil, 422, "validation", "/messages/0/key"},
		{"invalid utf-8 tag", "orders", key, []byte("{\"messages\":[{\"body\":1,\"tag\":\"\xff\xfe\"}]}"), nil, 422, "validation", "/messages/0/tag"},
		{"invalid utf-8 header", "orders", key, []byte("{\"messages\":[{\"body\":1,\"headers\":{\"x-a\":\"\xc3\"}}]}"), nil, 422, "validation", "/messages/0/headers/x-a"},
		{"invalid utf-8 body", "orders", key, []byte("{\"messages\":[{\"body\":\"\xe9t\u00e9\"}]}"), nil, 422, "validation", "/messages/0/body"},
		{"padded tag", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "tag": "created "}}}, nil, 422, "validation", "/messages/0/tag"},
		{"padded key", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "key": " o-1"}}}, nil, 422, "validation", "/messages/0/key"},
		{"padded header", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "headers": map[string]string{"x-a": "v\t"}}}}, nil, 422, "validation", "/messages/0/headers/x-a"},
		{"padded content type", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "content_type": " text/plain"}}}, nil, 422, "validation", "/messages/0/content_type"},
		{"reserved header", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "headers": map[string]string{"webhook-id": "x"}}}}, nil, 422, "validation", "/messages/0/headers/webhook-id"},
		{"crlf header", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "headers": map[string]string{"x-a": "1\r\nx-b: 2"}}}}, nil, 422, "validation", "/messages/0/headers/x-a"},
		{"bad content type", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1, "content_type": "not a type"}}}, nil, 422, "validation", "/messages/0/content_type"},
		{"second message bad", "orders", key, map[string]any{"messages": []any{map[string]any{"body": 1}, map[string]any{"body": 2, "tag": "\u0007"}}}, nil, 422, "validation", "/messages/1/tag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			headers := tc.headers
			code, body, hdr := h.Do("POST", "/v1/topics/"+tc.topic+"/messages", tc.key, tc.body, headers...)
			p := requireProblem(t, code, body, hdr, tc.status, tc.kind)
			if tc.pointer != "" {
				var ptrs []string
				for _, e := range p.Errors {
					ptrs = append(ptrs, e.Pointer)
				}
				require.Contains(t, ptrs, tc.pointer)
			}
		})
	}
	var stored int
	require.NoError(t, h.Store.DB().QueryRow("SELECT (SELECT COUNT(*) FROM queue_000001) + (SELECT COUNT(*) FROM queue_000002)").Scan(&stored))
	require.Zero(t, stored, "nothing of a refused request is stored")
}

// TestAdminBadInput covers the control plane's errors.
func TestAdminBadInput(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	tok := h.Token()
	h.CreateTopic("orders", 1)
	cases := []struct {
		name   string
		method string
		path   string
		token  string
		body   any
		status int
		kind   string
	}{
		{"no token", "GET", "/api/v1/topics", "", nil, 401, "unauthorized"},
		{"forged token", "GET", "/api/v1/topics", "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.", nil, 401, "unauthorized"},
		{"wrong password", "POST", "/api/v1/auth/login", "", map[string]string{"username": "admin", "password": "nope-nope"}, 401, "unauthorized"},
		{"topic name", "POST", "/api/v1/topics", tok, map[string]any{"name": "Orders!", "queues": 1}, 422, "validation"},
		{"reserved topic", "POST", "/api/v1/topics", tok, map[string]any{"name": "x.dlq", "queues": 1}, 422, "validation"},
		{"queue count", "POST", "/api/v1/topics", tok, map[string]any{"name": "ok", "queues": 0}, 422, "validation"},
		{"duplicate topic", "POST", "/api/v1/topics", tok, map[string]any{"name": "orders", "queues": 1}, 409, "conflict"},
		{"unknown topic field", "POST", "/api/v1/topics", tok, map[string]any{"name": "ok", "partitions": 3}, 422, "unknown-field"},
		{"missing topic", "GET", "/api/v1/topics/nope", tok, nil, 404, "not-found"},
		{"group endpoint", "POST", "/api/v1/groups", tok, map[string]any{"name": "g", "endpoint_url": "ftp://x", "subscriptions": []any{map[string]any{"topic": "orders"}}}, 422, "validation"},
		{"group userinfo", "POST", "/api/v1/groups", tok, map[string]any{"name": "g", "endpoint_url": "http://u:p@example.com", "subscriptions": []any{map[string]any{"topic": "orders"}}}, 422, "validation"},
		{"group unknown topic", "POST", "/api/v1/groups", tok, map[string]any{"name": "g", "endpoint_url": "http://127.0.0.1:1/", "subscriptions": []any{map[string]any{"topic": "nope"}}}, 422, "validation"},
		{"group batch size 0", "POST", "/api/v1/groups", tok, map[string]any{"name": "g", "endpoint_url": "http://127.0.0.1:1/", "batch_size": 0, "subscriptions": []any{map[string]any{"topic": "orders"}}}, 422, "validation"},
		{"group consume_from", "POST", "/api/v1/groups", tok, map[string]any{"name": "g", "endpoint_url": "http://127.0.0.1:1/", "consume_from": "yesterday", "subscriptions": []any{map[string]any{"topic": "orders"}}}, 422, "validation"},
		{"api key pattern", "POST", "/api/v1/api-keys", tok, map[string]any{"name": "k", "topics": []string{"Bad Pattern"}}, 422, "validation"},
		{"bad limit", "GET", "/api/v1/topics?limit=501", tok, nil, 422, "validation"},
		{"endpoint too long", "POST", "/api/v1/groups", tok, map[string]any{"name": "g", "endpoint_url": "http://127.0.0.1:1/" + strings.Repeat("a", 2048), "subscriptions": []any{map[string]any{"topic": "orders"}}}, 422, "validation"},
		{"endpoint raw space", "POST", "/api/v1/groups", tok, map[string]any{"name": "g", "endpoint_url": "http://127.0.0.1:1/hook?a=b c", "subscriptions": []any{map[string]any{"topic": "orders"}}}, 422, "validation"},
		{"endpoint non-ascii", "POST", "/api/v1/groups", tok, map[string]any{"name": "g", "endpoint_url": "http://127.0.0.1:1/é", "subscriptions": []any{map[string]any{"topic": "orders"}}}, 422, "validation"},
		{"non-ascii group", "GET", "/api/v1/groups/%C3%A9", tok, nil, 404, "not-found"},
		{"non-ascii group stats", "GET", "/api/v1/groups/%C3%A9/stats", tok, nil, 404, "not-found"},
		{"non-ascii group offsets", "GET", "/api/v1/groups/%C3%A9/offsets", tok, nil, 404, "not-found"},
		{"non-ascii group dead letters", "GET", "/api/v1/groups/%C3%A9/dead-letters", tok, nil, 404, "not-found"},
		{"non-ascii group pause", "POST", "/api/v1/groups/%C3%A9/pause", tok, nil, 404, "not-found"},
		{"non-ascii topic", "GET", "/api/v1/topics/%C3%A9", tok, nil, 404, "not-found"},
		{"non-ascii topic messages", "GET", "/api/v1/topics/%C3%A9/messages", tok, nil, 404, "not-found"},
		{"invalid utf-8 topic", "GET", "/api/v1/topics/%FF", tok, nil, 404, "not-found"},
		{"no route", "GET", "/api/v1/nothing-here", tok, nil, 404, "not-found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body, hdr := h.Do(tc.method, tc.path, tc.token, tc.body)
			requireProblem(t, code, body, hdr, tc.status, tc.kind)
		})
	}
}

// TestBlockedEndpoint checks the SSRF guard at group creation when private
// endpoints are not allowed.
func TestBlockedEndpoint(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, func(c *config.Config) { c.AllowPrivateEndpoints = false })
	h.CreateTopic("orders", 1)
	for _, u := range []string{"http://127.0.0.1:8080/", "http://10.1.2.3/", "http://169.254.169.254/latest", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://localhost/",
		"http://[::1%25lo]:8080/", "http://[fe80::1%25lo]/", "http://[::127.0.0.1]/", "http://[::ffff:0:127.0.0.1]/", "http://[64:ff9b::7f00:1]/"} {
		code, body, hdr := h.Do("POST", "/api/v1/groups", h.Token(), map[string]any{"name": "g", "endpoint_url": u, "subscriptions": []any{map[string]any{"topic": "orders"}}})
		requireProblem(t, code, body, hdr, 422, "blocked-endpoint")
	}
}

// TestConsoleBadNames: console pages named by a non-ASCII topic or group answer 404,
// never 500.
func TestConsoleBadNames(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	code, body, _ := h.Do("GET", "/api/v1/topics", h.Token(), nil)
	require.Equal(t, 200, code, string(body))
	for _, path := range []string{"/console/groups/%C3%A9", "/console/topics/%C3%A9", "/console/groups/%FF", "/console/dead-letters?group=%C3%A9"} {
		req, err := http.NewRequest("GET", h.BaseURL+path, nil)
		require.NoError(t, err)
		req.AddCookie(&http.Cookie{Name: "herald_session", Value: h.Token()})
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 404, resp.StatusCode, path)
	}
}
