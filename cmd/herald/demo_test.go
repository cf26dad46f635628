package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models/store"
)

// TestDemoSetUpThroughControl: the demo's topic and group are made by control, so
// they are validated (a loopback receiver is refused unless private endpoints are
// allowed), audited as the CLI, and a second run changes nothing but a moved
// receiver address.
func TestDemoSetUpThroughControl(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, st := heraldtest.Database(t)
	_, ns := heraldtest.Redis(t)
	open := func(allowPrivate bool) *app.App {
		cfg := heraldtest.TestConfig(dsn, ns)
		cfg.AllowPrivateEndpoints = allowPrivate
		a, err := app.Open(ctx, cfg, app.Roles{}, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		t.Cleanup(a.Close)
		return a
	}

	err := setUpDemo(ctx, open(false).Control, "127.0.0.1:8181")
	require.ErrorIs(t, err, ssrf.ErrBlocked, "the demo group is validated like any other")

	a := open(true)
	require.NoError(t, setUpDemo(ctx, a.Control, "127.0.0.1:8181"))
	require.NoError(t, setUpDemo(ctx, a.Control, "127.0.0.1:8181"), "a second run finds both")
	require.NoError(t, setUpDemo(ctx, a.Control, "127.0.0.1:8282"))

	g, err := a.Control.GetGroup(ctx, demoGroup)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8282/webhook", g.EndpointURL)
	require.Len(t, g.Subscriptions, 1)
	require.Equal(t, demoTopic, g.Subscriptions[0].Topic)
	require.Empty(t, g.Subscriptions[0].Tags, "every tag")
	require.NoError(t, g.Validate())
	topic, err := a.Control.GetTopic(ctx, demoTopic)
	require.NoError(t, err)
	require.Len(t, topic.Queues, 4)

	es, err := st.AuditList(ctx, store.AuditFilter{Actor: cliActor.Username}, 0, 10)
	require.NoError(t, err)
	var actions []string
	for _, e := range es {
		actions = append(actions, e.Action+" "+e.Subject)
	}
	require.Equal(t, []string{"group.update demo-receiver", "group.create demo-receiver", "topic.create github.events"}, actions, "newest first")
}
