package models

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEndpointAuthValidation(t *testing.T) {
	t.Parallel()
	base := func() *Group {
		g := &Group{Name: "billing", EndpointURL: "https://rx.example/hook?x=1", Subscriptions: []Subscription{{Topic: "orders"}}}
		g.ApplyDefaults()
		return g
	}
	for _, tc := range []struct {
		name    string
		edit    func(*Group)
		pointer string // "" = valid
	}{
		{"none", func(*Group) {}, ""},
		{"api key header", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"x-api-key": "k"} }, ""},
		{"basic", func(g *Group) { g.EndpointAuth.Basic = &BasicAuth{Username: "u", Password: "p"} }, ""},
		{"push", func(g *Group) { g.PushAuth = &PushAuth{Audience: "https://aud"} }, ""},
		{"webhook-*", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"webhook-id": "x"} }, "/endpoint_headers/webhook-id"},
		{"herald-*", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"herald-attempt": "x"} }, "/endpoint_headers/herald-attempt"},
		{"authorization", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"authorization": "x"} }, "/endpoint_headers/authorization"},
		{"content-type", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"content-type": "x"} }, "/endpoint_headers/content-type"},
		{"traceparent", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"traceparent": "x"} }, "/endpoint_headers/traceparent"},
		{"not canonical (a name given twice)", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"X-Key": "x"} }, "/endpoint_headers/X-Key"},
		{"invalid utf-8 value", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"x-key": "ok\xc3("} }, "/endpoint_headers/x-key"},
		{"C1 value", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"x-key": "a\u0085b"} }, "/endpoint_headers/x-key"},
		{"tab inside value", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"x-key": "a\tb"} }, ""},
		{"invalid utf-8 basic user", func(g *Group) { g.EndpointAuth.Basic = &BasicAuth{Username: "ok\xc3("} }, "/basic_auth/username"},
		{"invalid utf-8 basic password", func(g *Group) { g.EndpointAuth.Basic = &BasicAuth{Username: "u", Password: "ok\xc3("} }, "/basic_auth/password"},
		{"invalid utf-8 audience", func(g *Group) { g.PushAuth = &PushAuth{Audience: "ok\xc3("} }, "/push_auth/audience"},
		{"space in name", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"x key": "x"} }, "/endpoint_headers/x key"},
		{"CRLF value", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"x-key": "a\r\nb"} }, "/endpoint_headers/x-key"},
		{"long value", func(g *Group) { g.EndpointAuth.Headers = map[string]string{"x-key": strings.Repeat("a", 4097)} }, "/endpoint_headers/x-key"},
		{"colon user", func(g *Group) { g.EndpointAuth.Basic = &BasicAuth{Username: "a:b"} }, "/basic_auth/username"},
		{"basic and push", func(g *Group) {
			g.EndpointAuth.Basic = &BasicAuth{Username: "u"}
			g.PushAuth = &PushAuth{}
		}, "/basic_auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := base()
			tc.edit(g)
			err := g.Validate()
			if tc.pointer == "" {
				require.NoError(t, err)
				return
			}
			var v *ValidationError
			require.True(t, errors.As(err, &v), "%v", err)
			require.Equal(t, tc.pointer, v.Errors[0].Pointer)
		})
	}
}

func TestEndpointAuthMaskedAndAudience(t *testing.T) {
	t.Parallel()
	a := EndpointAuth{Headers: map[string]string{"x-api-key": "secret"}, Basic: &BasicAuth{Username: "u", Password: "p"}}
	m := a.Masked()
	require.Equal(t, MaskedValue, m.Headers["x-api-key"])
	require.Equal(t, "u", m.Basic.Username)
	require.Equal(t, MaskedValue, m.Basic.Password)
	require.Equal(t, "secret", a.Headers["x-api-key"], "Masked copies")
	g := &Group{EndpointURL: "https://rx.example/hook?token=1#f"}
	require.Equal(t, "https://rx.example/hook", g.PushAudience())
	g.PushAuth = &PushAuth{Audience: "aud"}
	require.Equal(t, "aud", g.PushAudience())
}
