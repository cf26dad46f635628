package control_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestEndpointAuthStaysWithItsHost: stored header values and the basic-auth
// password follow the endpoint within its host (a new path, an upgrade to https)
// and are dropped when it moves to another host, port or down to http, unless
// given again in the same change or an admin asks to keep them; an operator may
// not ask, and the drop is audited.
func TestEndpointAuthStaysWithItsHost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.ctl.CreateTopic(b.ctx, b.actor, control.TopicSpec{Name: "orders", Queues: ptr(1)})
	require.NoError(t, err)
	full := models.EndpointAuth{Headers: map[string]string{"x-api-key": "k1", "x-team": "t1"}, Basic: &models.BasicAuth{Username: "u", Password: "p1"}}
	_, err = b.ctl.CreateGroup(b.ctx, b.actor, control.GroupSpec{Name: "billing", EndpointURL: "http://8.8.8.8/hook",
		Subscriptions: []models.Subscription{{Topic: "orders"}}, EndpointHeaders: full.Headers, BasicAuth: full.Basic})
	require.NoError(t, err)
	operator := control.Actor{Username: "olga", Role: models.RoleOperator}
	admin := control.Actor{Username: "ada", Role: models.RoleAdmin}
	restore := func() {
		t.Helper()
		_, _, err := b.ctl.PatchGroup(b.ctx, admin, "billing", control.GroupPatch{EndpointURL: ptrS("http://8.8.8.8/hook"),
			SetEndpointHeaders: true, EndpointHeaders: full.Headers, SetBasicAuth: true, BasicAuth: full.Basic})
		require.NoError(t, err)
	}
	for _, tc := range []struct {
		name    string
		url     string
		actor   control.Actor
		keep    bool
		team    string // x-team given again in clear ("" leaves it masked)
		dropped []string
		want    models.EndpointAuth
		err     error
	}{
		{name: "a new path keeps them", url: "http://8.8.8.8/v2/hook", actor: operator, want: full},
		{name: "an upgrade to https keeps them", url: "https://8.8.8.8/hook", actor: operator, want: full},
		{name: "another host drops them", url: "http://8.8.4.4/hook", actor: operator,
			dropped: []string{"x-api-key", "x-team", control.BasicAuthDropped}, want: models.EndpointAuth{}},
		{name: "another port drops them", url: "http://8.8.8.8:8080/hook", actor: operator,
			dropped: []string{"x-api-key", "x-team", control.BasicAuthDropped}, want: models.EndpointAuth{}},
		{name: "a value given again stays", url: "http://8.8.4.4/hook", actor: operator, team: "t2",
			dropped: []string{"x-api-key", control.BasicAuthDropped}, want: models.EndpointAuth{Headers: map[string]string{"x-team": "t2"}}},
		{name: "an admin keeps them", url: "http://8.8.4.4/hook", actor: admin, keep: true, want: full},
		{name: "an operator may not keep them", url: "http://8.8.4.4/hook", actor: operator, keep: true, want: full, err: models.ErrForbidden},
	} {
		restore()
		p := control.GroupPatch{EndpointURL: ptrS(tc.url), KeepEndpointAuth: tc.keep}
		if tc.team != "" {
			p.SetEndpointHeaders, p.EndpointHeaders = true, map[string]string{"x-api-key": models.MaskedValue, "x-team": tc.team}
		}
		_, dropped, err := b.ctl.PatchGroup(b.ctx, tc.actor, "billing", p)
		if tc.err != nil {
			require.ErrorIs(t, err, tc.err, tc.name)
		} else {
			require.NoError(t, err, tc.name)
		}
		require.Equal(t, tc.dropped, dropped, tc.name)
		g, err := b.ctl.GetGroup(b.ctx, "billing")
		require.NoError(t, err)
		require.Equal(t, tc.want, g.EndpointAuth, tc.name)
	}
	es, err := b.st.AuditList(b.ctx, store.AuditFilter{Action: "group.endpoint_auth.drop"}, 0, 100)
	require.NoError(t, err)
	require.Len(t, es, 3, "each drop is audited")
}

func ptrS(s string) *string { return &s }
