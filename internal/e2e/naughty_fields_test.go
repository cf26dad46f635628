package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// requireClean accepts a 2xx, or a 4xx with a problem+json body; never a 5xx.
func requireClean(t *testing.T, what, s string, code int, body []byte, hdr http.Header) bool {
	t.Helper()
	require.Less(t, code, 500, "%s %q: %d %s", what, s, code, body)
	if code >= 400 {
		if code != http.StatusNotFound || hdr.Get("Content-Type") != "text/html; charset=UTF-8" {
			require.Equal(t, "application/problem+json", hdr.Get("Content-Type"), "%s %q: %d %s", what, s, code, body)
		}
		return false
	}
	return true
}

// TestNaughtyStringsEverywhere puts every naughty string into every other field a
// user controls (group names, subscription tags, endpoint URLs, API-key names,
// usernames, subscription topics, header names, content types, idempotency keys,
// API keys, path segments and query parameters):
// each answer is a clean 4xx problem+json, or a 2xx that returns the string
// byte for byte; never a 500.
func TestNaughtyStringsEverywhere(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	tok := h.Token()
	h.CreateTopic("naughty", 1) // published to; no group subscribes
	h.CreateTopic("subs", 1)    // subscribed to; nothing is published
	key := h.CreateAPIKey("naughty")
	h.CreateGroup(map[string]any{"name": "base", "endpoint_url": "http://127.0.0.1:1/", "subscriptions": []map[string]any{{"topic": "subs"}}})
	type groupView struct {
		Name          string `json:"name"`
		EndpointURL   string `json:"endpoint_url"`
		Subscriptions []struct {
			Tags []string `json:"tags"`
		} `json:"subscriptions"`
	}
	all := naughtyStrings(t)
	fields := map[string]func(t *testing.T, s string){
		"groups": func(t *testing.T, s string) {
			code, body, hdr := h.Do("POST", "/api/v1/groups", tok, map[string]any{"name": s, "endpoint_url": "http://127.0.0.1:1/",
				"subscriptions": []map[string]any{{"topic": "subs"}}})
			if requireClean(t, "group name", s, code, body, hdr) {
				var g groupView
				require.NoError(t, json.Unmarshal(body, &g))
				require.Equal(t, s, g.Name)
			}

		},
		"subscription topics": func(t *testing.T, s string) {
			code, body, hdr := h.Do("PATCH", "/api/v1/groups/base", tok, map[string]any{"subscriptions": []map[string]any{{"topic": s}}},
				"Content-Type", "application/merge-patch+json")
			requireClean(t, "subscription topic", s, code, body, hdr)
		},
		"endpoint urls": func(t *testing.T, s string) {
			for _, u := range []string{s, "http://127.0.0.1:1/?q=" + s} {
				code, body, hdr := h.Do("PATCH", "/api/v1/groups/base", tok, map[string]any{"endpoint_url": u}, "Content-Type", "application/merge-patch+json")
				if requireClean(t, "endpoint url", u, code, body, hdr) {
					var g groupView
					require.NoError(t, json.Unmarshal(getGroup(t, h, tok), &g))
					require.Equal(t, u, g.EndpointURL)
				}
			}
		},
		"api key names": func(t *testing.T, s string) {
			code, body, hdr := h.Do("POST", "/api/v1/api-keys", tok, map[string]any{"name": s, "topics": []string{"naughty"}})
			if requireClean(t, "api key name", s, code, body, hdr) {
				var k struct{ Name string }
				require.NoError(t, json.Unmarshal(body, &k))
				require.Equal(t, s, k.Name)
			}
			code, body, hdr = h.Do("POST", "/api/v1/api-keys", tok, map[string]any{"name": "k", "topics": []string{s}})
			requireClean(t, "api key topic", s, code, body, hdr)

		},
		"usernames": func(t *testing.T, s string) {
			code, body, hdr := h.Do("POST", "/api/v1/users", tok, map[string]any{"username": s, "password": "long-enough-pw"})
			if requireClean(t, "username", s, code, body, hdr) {
				var u struct{ Username string }
				require.NoError(t, json.Unmarshal(body, &u))
				require.Equal(t, s, u.Username)
			}
		},
		"publish": func(t *testing.T, s string) {
			msg := map[string]any{"body": 1, "headers": map[string]string{s: "v"}}
			code, body, hdr := h.Do("POST", "/v1/topics/naughty/messages", key, map[string]any{"messages": []any{msg}})
			requireClean(t, "header name", s, code, body, hdr)
			msg = map[string]any{"body_base64": "AA==", "content_type": s}
			code, body, hdr = h.Do("POST", "/v1/topics/naughty/messages", key, map[string]any{"messages": []any{msg}})
			requireClean(t, "content type", s, code, body, hdr)
			code, body, hdr = h.Do("POST", "/v1/topics/naughty/messages", key, map[string]any{"messages": []any{map[string]any{"body": 1}}}, "Idempotency-Key", headerSafe(s))
			requireClean(t, "idempotency key", s, code, body, hdr)
		},
		"paths": func(t *testing.T, s string) {
			seg := url.PathEscape(s)
			for _, p := range []string{"/api/v1/topics/" + seg, "/api/v1/topics/" + seg + "/messages", "/api/v1/groups/" + seg,
				"/api/v1/groups/" + seg + "/stats", "/api/v1/groups/" + seg + "/offsets", "/api/v1/groups/" + seg + "/dead-letters",
				"/api/v1/messages/" + seg, "/api/v1/users/" + seg, "/api/v1/topics/naughty/messages?key=" + url.QueryEscape(s) + "&tag=" + url.QueryEscape(s),
				"/api/v1/audit-log?actor=" + url.QueryEscape(s) + "&action=" + url.QueryEscape(s), "/api/v1/groups/base/dead-letters?state=" + url.QueryEscape(s)} {
				code, body, hdr := h.Do("GET", p, tok, nil)
				requireClean(t, "path", p, code, body, hdr)
			}
			code, body, hdr := h.Do("POST", "/api/v1/groups/"+seg+"/pause", tok, nil)
			requireClean(t, "pause path", s, code, body, hdr)
			code, body, hdr = h.Do("POST", "/v1/topics/"+seg+"/messages", key, map[string]any{"messages": []any{map[string]any{"body": 1}}})
			requireClean(t, "publish path", s, code, body, hdr)
			code, body, hdr = h.Do("POST", "/v1/topics/naughty/messages", "hk_"+headerSafe(s)+"_x", map[string]any{"messages": []any{map[string]any{"body": 1}}})
			requireClean(t, "api key", s, code, body, hdr)
		},
	}
	t.Run("subscription tags", func(t *testing.T) {
		t.Parallel()
		// One PATCH with every string as a tag: the 422 names each refused one by
		// pointer; a second PATCH with the rest must round-trip byte for byte.
		// The sibling subtests patch the same group at once: a 409 "kept changing;
		// retry" is the API asking for another try, as any client would make.
		patch := func(tags []string) (code int, body []byte, hdr http.Header) {
			for range 5 {
				code, body, hdr = h.Do("PATCH", "/api/v1/groups/base", tok, map[string]any{"subscriptions": []map[string]any{{"topic": "subs", "tags": tags}}},
					"Content-Type", "application/merge-patch+json")
				if code != 409 || !strings.Contains(string(body), "kept changing") {
					break
				}
			}
			return code, body, hdr
		}
		code, body, hdr := patch(all)
		require.Equal(t, 422, code, string(body))
		requireClean(t, "subscription tags", "", code, body, hdr)
		var p problemBody
		require.NoError(t, json.Unmarshal(body, &p))
		refused := map[string]bool{}
		for _, e := range p.Errors {
			refused[e.Pointer] = true
		}
		var kept []string
		for i, s := range all {
			if !refused["/subscriptions/0/tags/"+strconv.Itoa(i)] {
				kept = append(kept, s)
			}
		}
		require.Greater(t, len(kept), len(all)/2)
		code, body, hdr = patch(kept)
		require.True(t, requireClean(t, "subscription tags", "", code, body, hdr), string(body))
		var g groupView
		require.NoError(t, json.Unmarshal(getGroup(t, h, tok), &g))
		require.ElementsMatch(t, kept, g.Subscriptions[0].Tags)
	})
	for name, check := range fields {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // the fields overlap their database round trips
			for _, s := range all {
				check(t, s)
			}
		})
	}
}

func getGroup(t *testing.T, h *heraldtest.Herald, tok string) []byte {
	code, body, _ := h.Do("GET", "/api/v1/groups/base", tok, nil)
	require.Equal(t, 200, code, string(body))
	return body
}

// headerSafe drops what net/http refuses to send in a header value (the client, not
// Herald, would fail).
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}
