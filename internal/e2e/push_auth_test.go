package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
)

// verifyPushToken checks a push token the way a receiver would, with go-jose (a JWT
// library Herald does not sign with) and the JWKS Herald serves.
func verifyPushToken(t *testing.T, h *heraldtest.Herald, authz string, want josejwt.Expected) (josejwt.Claims, string) {
	t.Helper()
	tok, ok := strings.CutPrefix(authz, "Bearer ")
	require.True(t, ok, "Authorization %q", authz)
	code, body, _ := h.Do("GET", "/.well-known/jwks.json", "", nil)
	require.Equal(t, 200, code, string(body))
	var set jose.JSONWebKeySet
	require.NoError(t, json.Unmarshal(body, &set))
	parsed, err := josejwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.EdDSA})
	require.NoError(t, err)
	require.Len(t, parsed.Headers, 1)
	kid := parsed.Headers[0].KeyID
	keys := set.Key(kid)
	require.Len(t, keys, 1, "kid %s not in the JWKS %s", kid, body)
	var c josejwt.Claims
	require.NoError(t, parsed.Claims(keys[0].Key, &c))
	require.NoError(t, c.ValidateWithLeeway(want, 5*time.Second))
	return c, kid
}

// TestPushAuthTokenVerifiesWithJWKS: a group with push auth gets a Bearer JWT on each
// POST that an independent verifier accepts against /.well-known/jwks.json (iss, aud,
// sub, jti = webhook-id, exp ≤ 1 h); after a key rotation the old key stays
// published, so a token signed before it still verifies.
func TestPushAuthTokenVerifiesWithJWKS(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, func(c *config.Config) { c.PublicURL = "https://herald.test" })
	h.CreateTopic("orders", 1)
	recv := heraldtest.NewReceiver(t)
	recv.SetSecret(h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": recv.URL,
		"subscriptions": []map[string]any{{"topic": "orders"}}, "push_auth": map[string]any{"audience": "https://rx.example"}}))
	plain := heraldtest.NewReceiver(t)
	plain.SetSecret(h.CreateGroup(map[string]any{"name": "plain", "endpoint_url": plain.URL,
		"subscriptions": []map[string]any{{"topic": "orders"}}}))
	key := h.CreateAPIKey("orders")
	m := h.Publish(key, "orders", map[string]any{"body": map[string]any{"n": 1}})[0]
	recv.WaitCount(1, 10*time.Second)
	plain.WaitCount(1, 10*time.Second)
	require.Empty(t, plain.Get(m.ID)[0].Header.Get("Authorization"), "push auth is off by default")

	d := recv.Get(m.ID)[0]
	c, kid := verifyPushToken(t, h, d.Header.Get("Authorization"), josejwt.Expected{
		Issuer: "https://herald.test", Subject: "billing", AnyAudience: josejwt.Audience{"https://rx.example"}, ID: m.ID, Time: time.Now()})
	require.LessOrEqual(t, c.Expiry.Time().Sub(c.IssuedAt.Time()), time.Hour)
	require.Equal(t, d.Header.Get("Webhook-Timestamp"), strconv.FormatInt(c.IssuedAt.Time().Unix(), 10), "iat is the webhook-timestamp")

	// With an empty audience, aud is the endpoint URL (workers apply the change within a second).
	h.Admin("PATCH", "/groups/billing", map[string]any{"push_auth": map[string]any{"audience": ""}}, 200)
	deadline := time.Now().Add(15 * time.Second)
	for n := 2; ; n++ {
		require.True(t, time.Now().Before(deadline), "aud never became the endpoint URL")
		mn := h.Publish(key, "orders", map[string]any{"body": map[string]any{"n": n}})[0]
		require.Eventually(t, func() bool { return len(recv.Get(mn.ID)) > 0 }, 10*time.Second, 10*time.Millisecond)
		cn, _ := verifyPushToken(t, h, recv.Get(mn.ID)[0].Header.Get("Authorization"), josejwt.Expected{Subject: "billing", ID: mn.ID})
		if len(cn.Audience) == 1 && cn.Audience[0] == recv.URL {
			break
		}
		time.Sleep(100 * time.Millisecond) // latency: polls for a delivery signed after the audience change
	}

	var rot struct {
		KID       string   `json:"kid"`
		Published []string `json:"published"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/push-keys/rotate", nil, 200), &rot))
	require.NotEqual(t, kid, rot.KID)
	require.ElementsMatch(t, []string{kid, rot.KID}, rot.Published)
	_, kidAfter := verifyPushToken(t, h, d.Header.Get("Authorization"), josejwt.Expected{Subject: "billing", ID: m.ID})
	require.Equal(t, kid, kidAfter, "a token signed before the rotation still verifies")
}

// TestEndpointHeadersMaskedAndSent: static headers and basic auth are sent on each
// POST, sealed at rest, masked in reads, kept when a client echoes the masked value,
// and Herald's own header names are refused with 422.
func TestEndpointHeadersMaskedAndSent(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 1)
	recv := heraldtest.NewReceiver(t)
	recv.SetSecret(h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": recv.URL,
		"subscriptions":    []map[string]any{{"topic": "orders"}},
		"endpoint_headers": map[string]any{"x-api-key": "s3cret-key"}, "basic_auth": map[string]any{"username": "herald", "password": "pa55word"}}))

	var g struct {
		EndpointHeaders map[string]string `json:"endpoint_headers"`
		BasicAuth       map[string]string `json:"basic_auth"`
	}
	got := h.Admin("GET", "/groups/billing", nil, 200)
	require.NoError(t, json.Unmarshal(got, &g))
	require.Equal(t, map[string]string{"x-api-key": "********"}, g.EndpointHeaders)
	require.Equal(t, map[string]string{"username": "herald", "password": "********"}, g.BasicAuth)
	require.NotContains(t, string(got), "s3cret-key")
	var raw string
	require.NoError(t, h.Store.DB().QueryRow("SELECT endpoint_auth FROM consumer_groups WHERE name = 'billing'").Scan(&raw))
	require.NotContains(t, raw, "s3cret-key", "sealed at rest")
	require.NotContains(t, raw, "pa55word", "sealed at rest")

	// Echoing the masked document back, and changing another setting, keep the values.
	h.Admin("PATCH", "/groups/billing", map[string]any{"endpoint_headers": g.EndpointHeaders, "basic_auth": g.BasicAuth}, 200)
	h.Admin("PATCH", "/groups/billing", map[string]any{"rate_limit": 100}, 200)

	key := h.CreateAPIKey("orders")
	m := h.Publish(key, "orders", map[string]any{"body": map[string]any{"n": 1}})[0]
	recv.WaitCount(1, 10*time.Second)
	d := recv.Get(m.ID)[0]
	require.Equal(t, "s3cret-key", d.Header.Get("X-Api-Key"))
	require.Equal(t, "Basic aGVyYWxkOnBhNTV3b3Jk", d.Header.Get("Authorization"))
	require.True(t, d.Verified)
	var ts struct {
		WebhookID string `json:"webhook_id"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/groups/billing/test", nil, 200), &ts))
	require.Equal(t, "s3cret-key", recv.Get(ts.WebhookID)[0].Header.Get("X-Api-Key"), "test sends carry them too")

	for _, bad := range []map[string]any{
		{"endpoint_headers": map[string]any{"webhook-id": "x"}},
		{"endpoint_headers": map[string]any{"herald-topic": "x"}},
		{"endpoint_headers": map[string]any{"content-type": "text/plain"}},
		{"endpoint_headers": map[string]any{"authorization": "Bearer x"}},
		{"endpoint_headers": map[string]any{"traceparent": "x"}},
		{"endpoint_headers": map[string]any{"x-ok": "a\r\nb: c"}},
		{"push_auth": map[string]any{}},
	} {
		code, body, _ := h.Do("PATCH", "/api/v1/groups/billing", h.Token(), bad)
		require.Equal(t, 422, code, "%v: %s", bad, body)
	}
}
