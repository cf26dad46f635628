package models

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseFilter(t *testing.T) {
	t.Parallel()
	eu := map[string]string{"x-region": "eu", "x-env": "prod-1"}
	us := map[string]string{"x-region": "us", "x-flag": ""}
	none := map[string]string{}
	cases := []struct {
		src          string
		eu, us, none bool
	}{
		{`attributes.x-region = "eu"`, true, false, false},
		{`attributes.X-Region='eu'`, true, false, false},
		{`attributes.x-region != "eu"`, false, true, true},
		{`attributes:x-flag`, false, true, false},
		{`NOT attributes:x-flag`, true, false, true},
		{`hasPrefix(attributes.x-env, "prod")`, true, false, false},
		{`attributes.x-region = "eu" AND hasPrefix(attributes.x-env, "prod")`, true, false, false},
		{`attributes.x-region = "eu" OR attributes.x-region = "us"`, true, true, false},
		{`(attributes.x-region = "eu" OR attributes:x-flag) AND NOT attributes:x-env`, false, true, false},
		{`NOT (attributes.x-region = "eu" OR attributes.x-region = "us")`, false, false, true},
		{`attributes.x-region = "e\"u"`, false, false, false},
	}
	for _, c := range cases {
		f, err := ParseFilter(c.src)
		require.NoError(t, err, c.src)
		require.Equal(t, c.src, f.String())
		require.Equal(t, c.eu, f.Match(eu), "%s on eu", c.src)
		require.Equal(t, c.us, f.Match(us), "%s on us", c.src)
		require.Equal(t, c.none, f.Match(none), "%s on none", c.src)
	}
	f, err := ParseFilter("  ")
	require.NoError(t, err)
	require.Nil(t, f)
	require.True(t, f.Match(nil))

	for _, bad := range []string{
		`attributes.x-region`, `attributes.region = "eu"`, `attributes.x-region = eu`, `attributes.x-region == "eu"`,
		`attributes:x-a AND attributes:x-b OR attributes:x-c`, `(attributes:x-a`, `attributes:x-a)`, `not attributes:x-a`,
		`hasPrefix(attributes.x-a "p")`, `attributes.x-a = "unterminated`, `attributes.x-a = "\n"`, `attributes.x-a = "tab` + "\x01" + `"`,
		`attributes.content-type = "a"`, `body.x = "a"`, `NOT`, `AND attributes:x-a`, string(make([]byte, MaxFilterBytes+1)),
	} {
		_, err := ParseFilter(bad)
		require.ErrorIs(t, err, ErrInvalidFilter, "%q", bad)
	}
	deep := ""
	for range maxFilterDepth + 1 {
		deep += "NOT "
	}
	_, err = ParseFilter(deep + "attributes:x-a")
	require.True(t, errors.Is(err, ErrInvalidFilter))
}

func TestSubscriptionValidatesFilter(t *testing.T) {
	t.Parallel()
	g := Group{Name: "billing", EndpointURL: "https://example.com/hook", Subscriptions: []Subscription{{Topic: "orders", Filter: `attributes.region = "eu"`}}}
	g.ApplyDefaults()
	var v *ValidationError
	require.ErrorAs(t, g.Validate(), &v)
	require.Equal(t, "/subscriptions/0/filter", v.Errors[0].Pointer)
	g.Subscriptions[0].Filter = `attributes.x-region = "eu"`
	require.NoError(t, g.Validate())
	require.True(t, g.Subscriptions[0].MatchesAttributes(map[string]string{"x-region": "eu"}))
	require.False(t, g.Subscriptions[0].MatchesAttributes(nil))
}

// FuzzParseFilter: the parser never panics, accepts only what it can give back as
// written, and whatever it accepts evaluates on any headers.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{`attributes.x-region = "eu"`, `NOT attributes:x-flag`, `hasPrefix(attributes.x-env, 'prod')`,
		`(attributes:x-a OR attributes:x-b) AND NOT attributes.x-c != "\\"`, `((((`, `attributes.x-a = "é"`} {
		f.Add(s, "x-a", "eu")
	}
	f.Fuzz(func(t *testing.T, src, name, value string) {
		flt, err := ParseFilter(src)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidFilter)
			return
		}
		if flt == nil {
			return
		}
		require.Equal(t, src, flt.String())
		again, err := ParseFilter(flt.String())
		require.NoError(t, err)
		h := map[string]string{CanonicalHeaderName(name): value}
		require.Equal(t, flt.Match(h), again.Match(h))
	})
}
