package models

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIsControl(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r    rune
		ctl  bool
		name string
	}{
		{0x00, true, "NUL"}, {'\t', true, "tab"}, {'\n', true, "LF"}, {'\r', true, "CR"}, {0x1f, true, "unit separator"},
		{' ', false, "space"}, {'~', false, "tilde"}, {0x7f, true, "DEL"}, {0x80, true, "C1 first"}, {0x85, true, "NEL"},
		{0x9f, true, "C1 last"}, {0xa0, false, "no-break space"}, {'é', false, "é"}, {0x2028, false, "line separator (not Cc)"},
		{0xfffd, false, "replacement character"},
	} {
		require.Equal(t, tc.ctl, IsControl(tc.r), tc.name)
		require.Equal(t, tc.ctl, HasControl("a"+string(tc.r)+"b"), tc.name)
	}
	require.False(t, HasControl("ok\xc3("), "bytes that are not UTF-8 are not control characters")
}

func TestValidHeaderValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{"", true}, {"v", true}, {"a\tb", true}, {"日本語", true}, {"\ufffd", true},
		{"a\r\nb", false}, {"a\x00", false}, {"a\x7f", false}, {"a\u0085", false}, {"ok\xc3(", false}, {"\xff", false},
	} {
		require.Equal(t, tc.ok, ValidHeaderValue(tc.v), "%q", tc.v)
	}
	for _, tc := range []struct {
		v      string
		padded bool
	}{{"", false}, {"a", false}, {" a", true}, {"a ", true}, {"\ta", true}, {"a\t", true}, {"a b", false}} {
		require.Equal(t, tc.padded, Padded(tc.v), "%q", tc.v)
	}
}

func TestHeaderNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		canonical string
		valid     bool // ValidHeaderName
		message   bool // ValidMessageHeaderName
	}{
		{"x-api-key", "x-api-key", true, true},
		{"X-Api-Key", "x-api-key", true, true},
		{"X-API-KEY", "x-api-key", true, true},
		{"x-1", "x-1", true, true},
		{"X-" + strings.Repeat("A", 62), "x-" + strings.Repeat("a", 62), true, true},
		{"x-" + strings.Repeat("a", 63), "x-" + strings.Repeat("a", 63), true, false},
		{"x--a", "x--a", true, false},
		{"x-", "x-", true, false},
		{"x_a", "x_a", true, false},
		{"Authorization", "authorization", true, false},
		{"webhook-id", "webhook-id", true, false},
		{"X-Ünï", "x-Ünï", false, false},
		{"x a", "x a", false, false},
		{"x:a", "x:a", false, false},
		{"", "", false, false},
		{strings.Repeat("a", 128), strings.Repeat("a", 128), true, false},
		{strings.Repeat("a", 129), strings.Repeat("a", 129), false, false},
		{"!#$%&'*+-.^_`|~", "!#$%&'*+-.^_`|~", true, false},
	} {
		require.Equal(t, tc.canonical, CanonicalHeaderName(tc.name), tc.name)
		require.Equal(t, tc.valid, ValidHeaderName(tc.name), tc.name)
		require.Equal(t, tc.message, ValidMessageHeaderName(tc.name), tc.name)
	}
}

func TestCanonicalHeaders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   map[string]string
		want map[string]string
	}{
		{"nil", nil, nil},
		{"canonical", map[string]string{"x-a": "1"}, map[string]string{"x-a": "1"}},
		{"mixed case", map[string]string{"X-Api-Key": "k", "Accept": "a"}, map[string]string{"x-api-key": "k", "accept": "a"}},
		{"duplicate keeps its spelling", map[string]string{"X-A": "1", "x-a": "2"}, map[string]string{"x-a": "2", "X-A": "1"}},
	} {
		require.Equal(t, tc.want, CanonicalHeaders(tc.in), tc.name)
	}
	out := CanonicalHeaders(map[string]string{"X-A": "1", "X-a": "2"})
	require.Len(t, out, 2, "two spellings of one name: one is canonical, the other keeps its spelling")
	require.Contains(t, out, "x-a")
}
