package api_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/heraldtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/go-sql-driver/mysql.(*mysqlConn).startWatcher.func1"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"), goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(b, &v), string(b))
	return v
}

type group struct {
	Name                    string  `json:"name"`
	SigningSecret           string  `json:"signing_secret"`
	RateLimit               int     `json:"rate_limit"`
	MaxInFlight             int     `json:"max_in_flight"`
	Status                  string  `json:"status"`
	ConfigVersion           int64   `json:"config_version"`
	PreviousSecretExpiresAt *string `json:"previous_secret_expires_at"`
	Subscriptions           []struct {
		Topic string   `json:"topic"`
		Tags  []string `json:"tags"`
	} `json:"subscriptions"`
}

type cursors struct {
	Items []struct {
		Queue  int64 `json:"queue"`
		Offset int64 `json:"offset"`
		Lag    int64 `json:"lag"`
	} `json:"items"`
}

// TestAdminAPIMatchesSpec drives every control-plane operation through a client that
// validates each request and response against openapi.yaml, and checks what each
// one does: merge-patch updates, offset resets redelivering, secret rotation, test
// sends, key revocation, users and the audit log.
func TestAdminAPIMatchesSpec(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	sc := newSpecClient(t, h.BaseURL)

	sc.do("GET", "/healthz", "", nil, 200)
	sc.do("GET", "/readyz", "", nil, 200)
	sc.do("GET", "/openapi.yaml", "", nil, 200)
	sc.do("POST", "/api/v1/auth/login", "", map[string]string{"username": heraldtest.AdminUser, "password": "wrong password"}, 401)
	tok := decode[struct{ Token string }](t, sc.do("POST", "/api/v1/auth/login", "", map[string]string{"username": heraldtest.AdminUser, "password": heraldtest.AdminPassword}, 200)).Token

	sc.do("POST", "/api/v1/topics", tok, map[string]any{"name": "orders", "queues": 2}, 201)
	sc.do("POST", "/api/v1/topics", tok, map[string]any{"name": "spare", "queues": 1}, 201)
	sc.do("POST", "/api/v1/topics", tok, map[string]any{"name": "spare", "queues": 1}, 409)
	sc.do("GET", "/api/v1/topics?limit=1", tok, nil, 200)
	sc.do("GET", "/api/v1/topics/orders", tok, nil, 200)

	recv := heraldtest.NewReceiver(t)
	g := decode[group](t, sc.do("POST", "/api/v1/groups", tok, map[string]any{"name": "billing", "endpoint_url": recv.URL,
		"subscriptions": []map[string]any{{"topic": "orders"}}, "consume_from": "earliest"}, 201))
	recv.SetSecret(g.SigningSecret)
	sc.do("GET", "/api/v1/groups", tok, nil, 200)
	require.Empty(t, decode[group](t, sc.do("GET", "/api/v1/groups/billing", tok, nil, 200)).SigningSecret, "a plain GET shows no secret")
	require.Equal(t, g.SigningSecret, decode[group](t, sc.do("GET", "/api/v1/groups/billing?include=secret", tok, nil, 200)).SigningSecret)

	key := decode[struct {
		ID  int64
		Key string
	}](t, sc.do("POST", "/api/v1/api-keys", tok, map[string]any{"name": "ci", "topics": []string{"orders"}}, 201))
	sc.do("GET", "/api/v1/api-keys", tok, nil, 200)

	pub := decode[struct{ Messages []struct{ ID string } }](t, sc.do("POST", "/v1/topics/orders/messages", key.Key, map[string]any{"messages": []map[string]any{
		{"body": map[string]int{"n": 1}, "tag": "created", "key": "o-1"},
		{"body": map[string]int{"n": 2}, "tag": "created", "key": "o-1"},
		{"body_base64": "AAEC", "tag": "other"},
	}}, 201))
	recv.WaitCount(3, 15*time.Second)

	page := decode[struct {
		Items []struct{ ID, Tag string }
	}](t, sc.do("GET", "/api/v1/topics/orders/messages?tag=created&limit=10", tok, nil, 200))
	require.Len(t, page.Items, 2)
	require.Equal(t, pub.Messages[1].ID, page.Items[0].ID, "newest first")
	all := decode[struct {
		Items      []struct{ ID string }
		NextCursor string `json:"next_cursor"`
	}](t, sc.do("GET", "/api/v1/topics/orders/messages?limit=2", tok, nil, 200))
	require.Len(t, all.Items, 2)
	require.NotEmpty(t, all.NextCursor)
	rest := decode[struct{ Items []struct{ ID string } }](t, sc.do("GET", "/api/v1/topics/orders/messages?limit=2&cursor="+all.NextCursor, tok, nil, 200))
	require.Len(t, rest.Items, 1)
	sc.do("GET", "/api/v1/topics/orders/messages?from=yesterday", tok, nil, 422)
	msg := decode[map[string]any](t, sc.do("GET", "/api/v1/messages/"+pub.Messages[0].ID, tok, nil, 200))
	require.Equal(t, map[string]any{"n": float64(1)}, msg["body"])
	require.Equal(t, "AAEC", decode[map[string]any](t, sc.do("GET", "/api/v1/messages/"+pub.Messages[2].ID, tok, nil, 200))["body_base64"])
	sc.do("GET", "/api/v1/messages/msg_999_1", tok, nil, 404)
	later := decode[struct{ Messages []struct{ ID string } }](t, sc.do("POST", "/v1/topics/orders/messages", key.Key, map[string]any{"messages": []map[string]any{
		{"body": map[string]int{"n": 4}, "delay_seconds": 3600}}}, 201))
	require.Equal(t, "waiting", decode[map[string]any](t, sc.do("GET", "/api/v1/messages/"+later.Messages[0].ID, tok, nil, 200))["state"])
	sc.do("POST", "/v1/topics/orders/messages", key.Key, map[string]any{"messages": []map[string]any{{"body": 5, "delay_seconds": 0}}}, 422)
	sc.do("DELETE", "/api/v1/messages/"+pub.Messages[0].ID, tok, nil, 422)
	sc.do("DELETE", "/api/v1/messages/"+later.Messages[0].ID, tok, nil, 204)
	sc.do("DELETE", "/api/v1/messages/"+later.Messages[0].ID, tok, nil, 404)
	exerciseSchedules(t, sc, tok)

	require.Eventually(t, func() bool {
		cs := decode[cursors](t, sc.do("GET", "/api/v1/groups/billing/offsets", tok, nil, 200))
		var lag int64
		for _, c := range cs.Items {
			lag += c.Lag
		}
		return lag == 0
	}, 10*time.Second, 50*time.Millisecond, "cursors reach the end")

	// Merge patch: given members change, null restores the default, the rest stays.
	up := decode[group](t, sc.do("PATCH", "/api/v1/groups/billing", tok, map[string]any{"rate_limit": 5, "max_in_flight": 2}, 200))
	require.Equal(t, 5, up.RateLimit)
	require.Equal(t, 2, up.MaxInFlight)
	require.Greater(t, up.ConfigVersion, int64(1))
	up = decode[group](t, sc.do("PATCH", "/api/v1/groups/billing", tok, []byte(`{"rate_limit":null,"name":"billing"}`), 200))
	require.Equal(t, 0, up.RateLimit)
	require.Equal(t, 2, up.MaxInFlight)
	sc.do("PATCH", "/api/v1/groups/billing", tok, map[string]any{"colour": "blue"}, 422)
	sc.do("PATCH", "/api/v1/groups/billing", tok, map[string]any{"name": "other"}, 422)
	sc.do("PATCH", "/api/v1/groups/billing", tok, map[string]any{"batch_size": 0}, 422)
	sc.do("PATCH", "/api/v1/groups/billing", tok, map[string]any{"subscriptions": []map[string]any{{"topic": "nope"}}}, 422)
	up = decode[group](t, sc.do("PATCH", "/api/v1/groups/billing", tok, map[string]any{"subscriptions": []map[string]any{{"topic": "orders", "tags": []string{"created"}}, {"topic": "spare"}}}, 200))
	require.Len(t, up.Subscriptions, 2)
	require.Equal(t, []string{"created"}, up.Subscriptions[0].Tags)
	up = decode[group](t, sc.do("PATCH", "/api/v1/groups/billing", tok, map[string]any{"subscriptions": []map[string]any{{"topic": "orders"}}}, 200))
	require.Len(t, up.Subscriptions, 1)
	require.Len(t, decode[cursors](t, sc.do("GET", "/api/v1/groups/billing/offsets", tok, nil, 200)).Items, 2, "the spare topic's cursor went with its subscription")

	require.Equal(t, "paused", decode[group](t, sc.do("POST", "/api/v1/groups/billing/pause", tok, nil, 200)).Status)
	require.Equal(t, "running", decode[group](t, sc.do("POST", "/api/v1/groups/billing/resume", tok, nil, 200)).Status)

	// Reset to earliest: every message is delivered again (webhook-ids repeat).
	sc.do("POST", "/api/v1/groups/billing/offsets/reset", tok, map[string]any{"to": "sometime"}, 422)
	sc.do("POST", "/api/v1/groups/billing/offsets/reset", tok, map[string]any{"to": "earliest", "queues": []int64{999}}, 422)
	reset := decode[cursors](t, sc.do("POST", "/api/v1/groups/billing/offsets/reset", tok, map[string]any{"to": "earliest"}, 200))
	for _, c := range reset.Items {
		require.Zero(t, c.Offset)
	}
	// An idle cursor learns of its reset at its next fenced commit: publish to every queue.
	for range 2 {
		sc.do("POST", "/v1/topics/orders/messages", key.Key, map[string]any{"messages": []map[string]any{{"body": 4}}}, 201)
	}
	require.Eventually(t, func() bool {
		for _, m := range pub.Messages {
			if len(recv.Get(m.ID)) < 2 {
				return false
			}
		}
		return true
	}, 15*time.Second, 20*time.Millisecond, "messages redelivered after the reset")
	sc.do("POST", "/api/v1/groups/billing/offsets/reset", tok, map[string]any{"to": "timestamp", "timestamp": time.Now().UTC().Format(time.RFC3339)}, 200)
	sc.do("POST", "/api/v1/groups/billing/offsets/reset", tok, map[string]any{"to": "latest"}, 200)

	// Rotation: a new secret, the old one still signing until the window closes.
	rot := decode[group](t, sc.do("POST", "/api/v1/groups/billing/secret/rotate", tok, map[string]any{"overlap_seconds": 3600}, 200))
	require.NotEqual(t, g.SigningSecret, rot.SigningSecret)
	require.NotNil(t, rot.PreviousSecretExpiresAt)
	sc.do("POST", "/api/v1/groups/billing/secret/rotate", tok, map[string]any{"overlap_seconds": -1}, 422)
	recv.SetSecret(rot.SigningSecret)
	sc.do("GET", "/.well-known/jwks.json", "", nil, 200)
	sc.do("POST", "/api/v1/groups/billing/messages/msg_1_999999/resend", tok, nil, 404)
	sc.do("POST", "/api/v1/groups/billing/resend", tok, map[string]any{"queue": 1, "from_offset": 900000, "to_offset": 900001}, 202)
	sc.do("POST", "/api/v1/push-keys/rotate", tok, nil, 200)
	sc.do("PATCH", "/api/v1/groups/billing", tok, map[string]any{"push_auth": map[string]any{"audience": "https://rx.example"},
		"endpoint_headers": map[string]any{"x-api-key": "k"}}, 200)
	sc.do("PATCH", "/api/v1/groups/billing", tok, map[string]any{"push_auth": nil, "endpoint_headers": map[string]any{"x-api-key": nil}}, 200)
	ts := decode[struct {
		OK         bool   `json:"ok"`
		StatusCode int    `json:"status_code"`
		WebhookID  string `json:"webhook_id"`
	}](t, sc.do("POST", "/api/v1/groups/billing/test", tok, nil, 200))
	require.True(t, ts.OK)
	require.Equal(t, 204, ts.StatusCode)
	d := recv.Get(ts.WebhookID)
	require.Len(t, d, 1)
	require.True(t, d[0].Verified, "test send signed with the new secret")
	require.Len(t, strings.Fields(d[0].Header.Get("webhook-signature")), 2, "both secrets sign during the overlap")
	recv.Respond = func(heraldtest.Delivery) int { return 500 }
	failed := decode[map[string]any](t, sc.do("POST", "/api/v1/groups/billing/test", tok, map[string]any{"body": []int{1}}, 200))
	require.Equal(t, false, failed["ok"])
	require.Equal(t, "http_status", failed["error_class"])
	recv.Respond = nil

	// Dead letters: one attempt allowed, the endpoint failing, then redriven.
	sc.do("POST", "/api/v1/topics", tok, map[string]any{"name": "risky", "queues": 1}, 201)
	bad := heraldtest.NewReceiver(t)
	bad.Respond = func(heraldtest.Delivery) int { return 500 }
	bad.SetSecret(decode[group](t, sc.do("POST", "/api/v1/groups", tok, map[string]any{"name": "flaky", "endpoint_url": bad.URL,
		"subscriptions": []map[string]any{{"topic": "risky"}}, "max_attempts": 1, "consume_from": "earliest"}, 201)).SigningSecret)
	riskyKey := decode[struct{ Key string }](t, sc.do("POST", "/api/v1/api-keys", tok, map[string]any{"name": "risky", "topics": []string{"risky"}}, 201)).Key
	sc.do("POST", "/v1/topics/risky/messages", riskyKey, map[string]any{"messages": []map[string]any{{"body": map[string]string{"x": "<b>"}}}}, 201)
	var dl struct {
		Items []struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
		}
	}
	require.Eventually(t, func() bool {
		dl = decode[struct {
			Items []struct {
				ID    int64  `json:"id"`
				State string `json:"state"`
			}
		}](t, sc.do("GET", "/api/v1/groups/flaky/dead-letters?state=pending", tok, nil, 200))
		return len(dl.Items) == 1
	}, 20*time.Second, 100*time.Millisecond, "the failing message is dead-lettered")
	sc.do("GET", fmt.Sprintf("/api/v1/groups/flaky/dead-letters/%d", dl.Items[0].ID), tok, nil, 200)
	sc.do("GET", "/api/v1/groups/flaky/stats", tok, nil, 200)
	sc.do("GET", "/api/v1/groups/flaky/attempts?status_class=5xx", tok, nil, 200) // filters: TestGroupAttemptsSearch
	// Skip and resume name a blocked queue of an ordered group; flaky has none.
	sc.do("POST", "/api/v1/groups/flaky/queues/1/skip", tok, nil, 404)
	sc.do("POST", "/api/v1/groups/flaky/queues/1/resume", tok, nil, 404)
	// Skip and resume of a blocked key: a key is required; flaky has no blocked key.
	sc.do("POST", "/api/v1/groups/flaky/blocked-keys/skip", tok, map[string]any{"key": "k"}, 404)
	sc.do("POST", "/api/v1/groups/flaky/blocked-keys/resume", tok, map[string]any{"queue": 1}, 422)
	bad.Respond = nil
	require.Equal(t, map[string]any{"redriven": float64(1)}, decode[map[string]any](t, sc.do("POST", "/api/v1/groups/flaky/dead-letters/redrive", tok, map[string]any{"ids": []int64{dl.Items[0].ID}}, 200)))
	bad.WaitCount(1, 20*time.Second)
	sc.do("POST", "/api/v1/groups/flaky/dead-letters/purge", tok, nil, 200)

	// Topics: grow, mark a queue read-only, delete only without subscribers.
	tp := decode[struct{ Queues []struct{ ID int64 } }](t, sc.do("PATCH", "/api/v1/topics/orders", tok, map[string]any{"queues": 3}, 200))
	require.Len(t, tp.Queues, 3)
	require.Len(t, decode[cursors](t, sc.do("GET", "/api/v1/groups/billing/offsets", tok, nil, 200)).Items, 3, "a new queue gets a cursor for every group")
	sc.do("PATCH", "/api/v1/topics/orders", tok, map[string]any{"queues": 1}, 422)
	sc.do("PATCH", "/api/v1/topics/orders", tok, map[string]any{"read_only_queues": []int64{tp.Queues[0].ID}}, 200)
	sc.do("DELETE", "/api/v1/topics/orders", tok, nil, 409)
	sc.do("DELETE", "/api/v1/topics/spare", tok, nil, 204)
	sc.do("GET", "/api/v1/topics/spare", tok, nil, 404)
	sc.do("PATCH", "/api/v1/topics/orders", tok, map[string]any{"retention_hours": 24, "retention_policy": "strict"}, 200)
	sc.do("PATCH", "/api/v1/topics/orders", tok, map[string]any{"retention_policy": "never"}, 422)
	ret := decode[struct {
		RetentionHours int `json:"retention_hours"`
		Retention      struct {
			HeldBackBy []string `json:"held_back_by"`
		} `json:"retention"`
	}](t, sc.do("GET", "/api/v1/topics/orders", tok, nil, 200))
	require.Equal(t, 24, ret.RetentionHours)
	require.NotNil(t, ret.Retention.HeldBackBy)

	// Groups: delete (the dead-letter topic goes with it), then a forced topic delete.
	sc.do("DELETE", "/api/v1/groups/flaky?purge=maybe", tok, nil, 422)
	sc.do("DELETE", "/api/v1/groups/flaky?purge=true", tok, nil, 200)
	sc.do("DELETE", "/api/v1/groups/flaky", tok, nil, 404)
	sc.do("GET", "/api/v1/topics/flaky.dlq", tok, nil, 404)

	// Users: roles, token revocation, the last admin.
	u := decode[struct{ ID int64 }](t, sc.do("POST", "/api/v1/users", tok, map[string]any{"username": "vic", "password": "viewer password", "role": "viewer"}, 201))
	sc.do("POST", "/api/v1/users", tok, map[string]any{"username": "vic", "password": "viewer password"}, 409)
	sc.do("POST", "/api/v1/users", tok, map[string]any{"username": "x", "password": "short"}, 422)
	users := decode[struct {
		Items []struct {
			ID       int64
			Username string
		}
	}](t, sc.do("GET", "/api/v1/users", tok, nil, 200))
	require.Len(t, users.Items, 2)
	viewer := decode[struct{ Token string }](t, sc.do("POST", "/api/v1/auth/login", "", map[string]string{"username": "vic", "password": "viewer password"}, 200)).Token
	sc.do("POST", "/api/v1/auth/refresh", viewer, nil, 200) // any role may refresh its token
	sc.do("PATCH", "/api/v1/groups/billing", viewer, map[string]any{"rate_limit": 1}, 403)
	sc.do("GET", "/api/v1/users", viewer, nil, 403)
	require.Empty(t, decode[group](t, sc.do("GET", "/api/v1/groups/billing", viewer, nil, 200)).SigningSecret, "viewers never see secrets")
	sc.do("GET", "/api/v1/groups/billing?include=secret", viewer, nil, 403)
	sc.do("PATCH", fmt.Sprintf("/api/v1/users/%d", u.ID), tok, map[string]any{"role": "operator"}, 200)
	sc.do("GET", "/api/v1/topics", viewer, nil, 401)
	viewer = decode[struct{ Token string }](t, sc.do("POST", "/api/v1/auth/login", "", map[string]string{"username": "vic", "password": "viewer password"}, 200)).Token
	sc.do("POST", fmt.Sprintf("/api/v1/users/%d/revoke-tokens", u.ID), tok, nil, 204)
	sc.do("GET", "/api/v1/topics", viewer, nil, 401)
	sc.do("POST", "/api/v1/auth/refresh", viewer, nil, 401)
	adminID := users.Items[0].ID
	sc.do("PATCH", fmt.Sprintf("/api/v1/users/%d", adminID), tok, map[string]any{"role": "viewer"}, 409)
	sc.do("DELETE", fmt.Sprintf("/api/v1/users/%d", adminID), tok, nil, 409)
	sc.do("DELETE", fmt.Sprintf("/api/v1/users/%d", u.ID), tok, nil, 204)
	sc.do("DELETE", fmt.Sprintf("/api/v1/users/%d", u.ID), tok, nil, 404)

	// Revocation takes effect at once on this instance.
	sc.do("POST", fmt.Sprintf("/api/v1/api-keys/%d/revoke", key.ID), tok, nil, 200)
	sc.do("POST", "/v1/topics/orders/messages", key.Key, map[string]any{"messages": []map[string]any{{"body": 1}}}, 401)

	audit := decode[struct {
		Items []struct{ Action, Actor, Subject string }
	}](t, sc.do("GET", "/api/v1/audit-log?action="+url.QueryEscape("group.")+"&limit=500", tok, nil, 200))
	actions := map[string]bool{}
	for _, e := range audit.Items {
		actions[e.Action] = true
		require.Equal(t, heraldtest.AdminUser, e.Actor)
	}
	for _, a := range []string{"group.create", "group.update", "group.paused", "group.running", "group.offsets.reset", "group.secret.rotate", "group.secret.read", "group.test"} {
		require.True(t, actions[a], "audit log has %s", a)
	}
	sc.do("GET", "/api/v1/audit-log", tok, nil, 200)
	exerciseNodes(t, sc, tok)

	doc := loadSpec(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			require.True(t, sc.seen[op.OperationID], "%s %s (%s) was not exercised against the spec", method, path, op.OperationID)
		}
	}
}
