package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestInvalidTextRefusedEverywhere puts text that is not UTF-8 into every string a
// client sends as JSON, both as raw bytes (`ok\xc3(`) and as a lone surrogate
// escape (`ok\ud800(`), which encoding/json would store as `ok�(`: each answer is a
// 422 validation problem naming the field by JSON pointer, and nothing of it is stored.
func TestInvalidTextRefusedEverywhere(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	tok := h.Token()
	h.CreateTopic("orders", 1)
	key := h.CreateAPIKey("orders")
	h.CreateGroup(map[string]any{"name": "base", "endpoint_url": "http://127.0.0.1:1/", "subscriptions": []map[string]any{{"topic": "orders"}}})
	var u struct{ ID int64 }
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/users", map[string]any{"username": "viewer", "password": "long-enough-pw"}, 201), &u))
	group := func(extra string) string {
		return `{"name":"g","endpoint_url":"http://127.0.0.1:1/","subscriptions":[{"topic":"orders"}]` + extra + `}`
	}
	msg := func(fields string) string { return `{"messages":[{"body":1` + fields + `}]}` }
	patch := []string{"Content-Type", "application/merge-patch+json"}
	cases := []struct {
		name, method, path, bearer, body, pointer string
		headers                                   []string
	}{
		{"api key name", "POST", "/api/v1/api-keys", tok, `{"name":"%s","topics":["orders"]}`, "/name", nil},
		{"api key topic", "POST", "/api/v1/api-keys", tok, `{"name":"k","topics":["%s"]}`, "/topics/0", nil},
		{"username", "POST", "/api/v1/users", tok, `{"username":"%s","password":"long-enough-pw"}`, "/username", nil},
		{"password", "POST", "/api/v1/users", tok, `{"username":"someone","password":"long-enough-%s"}`, "/password", nil},
		{"password change", "PATCH", fmt.Sprintf("/api/v1/users/%d", u.ID), tok, `{"password":"long-enough-%s"}`, "/password", patch},
		{"login username", "POST", "/api/v1/auth/login", "", `{"username":"%s","password":"x"}`, "/username", nil},
		{"topic name", "POST", "/api/v1/topics", tok, `{"name":"%s","queues":1}`, "/name", nil},
		{"tag", "POST", "/v1/topics/orders/messages", key, msg(`,"tag":"%s"`), "/messages/0/tag", nil},
		{"key", "POST", "/v1/topics/orders/messages", key, msg(`,"key":"%s"`), "/messages/0/key", nil},
		{"header value", "POST", "/v1/topics/orders/messages", key, msg(`,"headers":{"x-a":"%s"}`), "/messages/0/headers/x-a", nil},
		{"header value, second message", "POST", "/v1/topics/orders/messages", key, `{"messages":[{"body":1},{"body":2,"headers":{"x-a":"%s"}}]}`, "/messages/1/headers/x-a", nil},
		{"content type", "POST", "/v1/topics/orders/messages", key, msg(`,"content_type":"text/%s"`), "/messages/0/content_type", nil},
		{"group name", "POST", "/api/v1/groups", tok, `{"name":"%s","endpoint_url":"http://127.0.0.1:1/","subscriptions":[{"topic":"orders"}]}`, "/name", nil},
		{"subscription tag", "POST", "/api/v1/groups", tok, `{"name":"g","endpoint_url":"http://127.0.0.1:1/","subscriptions":[{"topic":"orders","tags":["a","%s"]}]}`, "/subscriptions/0/tags/1", nil},
		{"endpoint url", "POST", "/api/v1/groups", tok, `{"name":"g","endpoint_url":"http://127.0.0.1:1/%s","subscriptions":[{"topic":"orders"}]}`, "/endpoint_url", nil},
		{"endpoint header", "POST", "/api/v1/groups", tok, group(`,"endpoint_headers":{"x-api-key":"%s"}`), "/endpoint_headers/x-api-key", nil},
		{"basic username", "POST", "/api/v1/groups", tok, group(`,"basic_auth":{"username":"%s","password":"p"}`), "/basic_auth/username", nil},
		{"basic password", "POST", "/api/v1/groups", tok, group(`,"basic_auth":{"username":"u","password":"%s"}`), "/basic_auth/password", nil},
		{"push audience", "POST", "/api/v1/groups", tok, group(`,"push_auth":{"audience":"%s"}`), "/push_auth/audience", nil},
		{"patched subscription tag", "PATCH", "/api/v1/groups/base", tok, `{"subscriptions":[{"topic":"orders","tags":["%s"]}]}`, "/subscriptions/0/tags/0", patch},
		{"patched endpoint header", "PATCH", "/api/v1/groups/base", tok, `{"endpoint_headers":{"x-api-key":"%s"}}`, "/endpoint_headers/x-api-key", patch},
		{"patched basic password", "PATCH", "/api/v1/groups/base", tok, `{"basic_auth":{"username":"u","password":"%s"}}`, "/basic_auth/password", patch},
		{"patched member name", "PATCH", "/api/v1/groups/base", tok, `{"%s":1}`, "/ok\ufffd(", patch},
	}
	for _, form := range []struct{ name, text string }{{"raw", "ok\xc3("}, {"escaped", `ok\ud800(`}} {
		for _, tc := range cases {
			t.Run(form.name+" "+tc.name, func(t *testing.T) {
				body := strings.Replace(tc.body, "%s", form.text, 1)
				code, out, hdr := h.Do(tc.method, tc.path, tc.bearer, []byte(body), tc.headers...)
				p := requireProblem(t, code, out, hdr, http.StatusUnprocessableEntity, "validation")
				require.NotEmpty(t, p.Errors, string(out))
				require.Equal(t, tc.pointer, p.Errors[0].Pointer, string(out))
			})
		}
	}
	// A body is JSON kept byte for byte: a lone surrogate escape there is stored as sent.
	code, out, _ := h.Do("POST", "/v1/topics/orders/messages", key, []byte(`{"messages":[{"body":{"s":"ok\ud800("}}]}`))
	require.Equal(t, 201, code, string(out))
	var pub struct{ Messages []heraldtest.Published }
	require.NoError(t, json.Unmarshal(out, &pub))
	got := h.Admin("GET", "/messages/"+pub.Messages[0].ID, nil, 200)
	require.Contains(t, string(got), `"body":{"s":"ok\ud800("}`)

	for _, list := range []string{"/api-keys", "/users", "/topics", "/groups", "/groups/base"} {
		require.NotContains(t, string(h.Admin("GET", list, nil, 200)), "\ufffd", list)
	}
	var stored int
	require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(*) FROM queue_000001").Scan(&stored))
	require.Equal(t, 1, stored, "only the message with the kept body")
}

// TestHeaderNamesAnyCase: header names are case-insensitive (RFC 9110 §5.1): a
// group's static header and a message's x-* header are accepted in any case, stored
// and shown in lower case, and sent; two spellings of one name are a 422.
func TestHeaderNamesAnyCase(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 1)
	recv := heraldtest.NewReceiver(t)
	recv.SetSecret(h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": recv.URL,
		"subscriptions": []map[string]any{{"topic": "orders"}}, "endpoint_headers": map[string]any{"X-Api-Key": "s3cret"}}))
	var g struct {
		EndpointHeaders map[string]string `json:"endpoint_headers"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/billing", nil, 200), &g))
	require.Equal(t, map[string]string{"x-api-key": "********"}, g.EndpointHeaders)
	// The masked value echoed back in another case keeps the secret.
	h.Admin("PATCH", "/groups/billing", map[string]any{"endpoint_headers": map[string]any{"X-API-KEY": "********"}}, 200)

	key := h.CreateAPIKey("orders")
	m := h.Publish(key, "orders", map[string]any{"body": 1, "headers": map[string]string{"X-Trace-Id": "t-1"}})[0]
	recv.WaitCount(1, 10*time.Second)
	d := recv.Get(m.ID)[0]
	require.Equal(t, "s3cret", d.Header.Get("X-Api-Key"))
	require.Equal(t, "t-1", d.Header.Get("X-Trace-Id"))
	var got struct{ Headers map[string]string }
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/messages/"+m.ID, nil, 200), &got))
	require.Equal(t, map[string]string{"x-trace-id": "t-1"}, got.Headers)

	code, out, hdr := h.Do("PATCH", "/api/v1/groups/billing", h.Token(), map[string]any{"endpoint_headers": map[string]any{"X-A": "1", "x-a": "2"}},
		"Content-Type", "application/merge-patch+json")
	p := requireProblem(t, code, out, hdr, 422, "validation")
	require.Equal(t, "/endpoint_headers/X-A", p.Errors[0].Pointer)
	code, out, hdr = h.Do("POST", "/v1/topics/orders/messages", key, map[string]any{"messages": []any{map[string]any{"body": 1, "headers": map[string]string{"X-A": "1", "x-a": "2"}}}})
	p = requireProblem(t, code, out, hdr, 422, "validation")
	require.Equal(t, "/messages/0/headers/X-A", p.Errors[0].Pointer)
}
