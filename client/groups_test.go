package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/heraldtest"
)

// TestGroupSettingsRoundTrip: every setting of a GroupSpec reaches Herald and
// reads back in a Group; a Group re-encoded is the API's GET, field for field (so
// the client drops nothing); the masked values sent back keep the stored ones; and
// PatchGroup reaches the settings a create cannot combine (push auth). A spec
// with zero settings gets the server's defaults.
func TestGroupSettingsRoundTrip(t *testing.T) {
	t.Parallel()
	h, c := admin(t)
	ctx := context.Background()
	for _, name := range []string{"orders", "refunds"} {
		_, err := c.CreateTopic(ctx, client.TopicSpec{Name: name, Queues: 1, RetentionHours: 48, RetentionPolicy: "strict"})
		require.NoError(t, err)
	}
	tp, err := c.GetTopic(ctx, "orders")
	require.NoError(t, err)
	require.Equal(t, 48, tp.RetentionHours)
	require.Equal(t, "strict", tp.RetentionPolicy)
	require.NotNil(t, tp.Retention)

	recv := heraldtest.NewReceiver(t)
	settings := client.GroupSettings{EndpointURL: recv.URL,
		Subscriptions: []client.Subscription{{Topic: "orders", Tags: []string{"created"}}, {Topic: "refunds", Tags: []string{}}},
		BatchSize:     20, BatchMaxBytes: 2048, BatchWindowMS: 250, MaxInFlight: 3, RateLimit: 40, TimeoutMS: 2500,
		MaxAttempts: 4, RetrySchedule: []int{7, 70}, Ordered: true, Ordering: "queue", OrderedOnExhausted: "pause", ConsumeFrom: "earliest",
		DeadLetterRetentionHours: 48, MaxThrottles: 6, EndpointHeaders: map[string]string{"x-api-key": "k1"},
		BasicAuth: &client.BasicAuth{Username: "ops", Password: "s3cret"}}
	g, err := c.CreateGroup(ctx, client.GroupSpec{Name: "billing", GroupSettings: settings})
	require.NoError(t, err)
	want := settings
	want.EndpointHeaders = map[string]string{"x-api-key": client.MaskedValue}
	want.BasicAuth = &client.BasicAuth{Username: "ops", Password: client.MaskedValue}
	require.Equal(t, want, g.GroupSettings)

	sameAsAPI := func(name string) *client.Group {
		t.Helper()
		g, err := c.GetGroup(ctx, name)
		require.NoError(t, err)
		mine, err := json.Marshal(g)
		require.NoError(t, err)
		require.JSONEq(t, string(h.Admin(http.MethodGet, "/groups/"+name, nil, 200)), string(mine))
		return g
	}
	require.Equal(t, want, sameAsAPI("billing").GroupSettings)
	require.Empty(t, sameAsAPI("billing").SigningSecret, "a plain read shows no secret")
	withSecret, err := c.GroupSecret(ctx, "billing")
	require.NoError(t, err)
	require.NotEmpty(t, g.SigningSecret)
	require.Equal(t, g.SigningSecret, withSecret.SigningSecret)
	require.Equal(t, want, withSecret.GroupSettings)
	_, err = c.GroupSecret(ctx, "nope")
	require.ErrorIs(t, err, client.ErrNotFound)

	// Send the read back as it is, with push auth instead of basic auth.
	g.BasicAuth, g.PushAuth = nil, &client.PushAuth{Audience: "https://aud.example"}
	body, err := json.Marshal(g.GroupSettings)
	require.NoError(t, err)
	var patch map[string]any
	require.NoError(t, json.Unmarshal(body, &patch))
	g, err = c.PatchGroup(ctx, "billing", patch)
	require.NoError(t, err)
	want.BasicAuth, want.PushAuth = nil, &client.PushAuth{Audience: "https://aud.example"}
	require.Equal(t, want, sameAsAPI("billing").GroupSettings)
	require.Equal(t, want, g.GroupSettings)

	plain, err := c.CreateGroup(ctx, client.GroupSpec{Name: "plain", GroupSettings: client.GroupSettings{
		EndpointURL: recv.URL, Subscriptions: []client.Subscription{{Topic: "orders"}}}})
	require.NoError(t, err)
	require.Equal(t, 16, plain.MaxInFlight, "zero settings take the defaults")
	require.Equal(t, 336, plain.DeadLetterRetentionHours)
	require.Equal(t, "dead_letter", plain.OrderedOnExhausted)
	sameAsAPI("plain")

	del, err := c.DeleteGroup(ctx, "plain", false)
	require.NoError(t, err)
	require.False(t, del.Purged)
	require.NotEmpty(t, del.PurgeAfter)
	del, err = c.DeleteGroup(ctx, "billing", true)
	require.NoError(t, err)
	require.True(t, del.Purged)
	require.Empty(t, del.PurgeAfter)

	_, err = c.CreateGroup(ctx, client.GroupSpec{Name: "again", GroupSettings: client.GroupSettings{
		EndpointURL: recv.URL, Subscriptions: []client.Subscription{{Topic: "refunds"}}}})
	require.NoError(t, err)
	_, err = c.DeleteTopic(ctx, "refunds", false)
	require.ErrorIs(t, err, client.ErrConflict)
	groups, err := c.DeleteTopic(ctx, "refunds", true)
	require.NoError(t, err)
	require.Equal(t, []string{"again"}, groups)
	groups, err = c.DeleteTopic(ctx, "orders", false)
	require.NoError(t, err)
	require.Nil(t, groups)
}

// TestErrorListsEachFieldOnce: a problem whose detail sums up its field errors is
// spelled with each field error once; a detail that says more is kept.
func TestErrorListsEachFieldOnce(t *testing.T) {
	t.Parallel()
	_, c := admin(t)
	_, err := c.CreateGroup(context.Background(), client.GroupSpec{Name: "bad", GroupSettings: client.GroupSettings{
		EndpointURL: "ftp://x", BatchSize: 5000, MaxAttempts: 500}})
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.GreaterOrEqual(t, len(e.Errors), 3)
	for _, f := range e.Errors {
		require.Equal(t, 1, strings.Count(err.Error(), f.Pointer+": "), "%s in %s", f.Pointer, err)
	}

	other := &client.Error{Status: 422, Kind: "blocked-endpoint", Detail: "endpoint resolves to 10.0.0.1",
		Errors: []client.FieldError{{Pointer: "/endpoint_url", Detail: "private address"}}}
	require.Equal(t, "422 blocked-endpoint: endpoint resolves to 10.0.0.1; /endpoint_url: private address", other.Error())
}
