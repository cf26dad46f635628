package ssrf

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBlocked(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr    string
		blocked bool
	}{
		{"127.0.0.1", true},
		{"10.1.2.3", true},
		{"169.254.169.254", true},
		{"100.64.0.1", true},
		{"203.0.113.9", true},
		{"8.8.8.8", false},
		{"93.184.216.34", false},
		{"::1", true},
		{"::", true},
		{"::1%lo", true},
		{"fe80::1%lo", true},
		{"fe80::1", true},
		{"2606:4700::1111%eth0", true},
		{"::127.0.0.1", true},
		{"::8.8.8.8", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true},
		{"::ffff:8.8.8.8", false},
		{"::ffff:0:127.0.0.1", true},
		{"64:ff9b::7f00:1", true},
		{"64:ff9b:1::a00:1", true},
		{"2002:7f00:1::", true},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"ff02::1", true},
		{"2606:4700:4700::1111", false},
		{"2a00:1450:4001:80b::200e", false},
	}
	for _, tc := range cases {
		ip, err := netip.ParseAddr(tc.addr)
		require.NoError(t, err, tc.addr)
		require.Equal(t, tc.blocked, Blocked(ip), tc.addr)
	}
	require.True(t, Blocked(netip.Addr{}), "the zero Addr is refused")
}

func TestGuardZonedAddresses(t *testing.T) {
	t.Parallel()
	g := Guard{}
	for _, u := range []string{"http://[::1%25lo]:8080/", "http://[fe80::1%25lo]/", "http://[::127.0.0.1]/", "http://[::ffff:0:127.0.0.1]/"} {
		require.ErrorIs(t, g.CheckURL(context.Background(), u), ErrBlocked, u)
	}
	for _, a := range []string{"[::1%lo]:8080", "[fe80::1%lo]:80", "[::ffff:127.0.0.1]:80", "[::127.0.0.1]:80"} {
		require.True(t, errors.Is(g.Control("tcp6", a, nil), ErrBlocked), a)
	}
	require.NoError(t, g.Control("tcp4", "8.8.8.8:443", nil))
	require.NoError(t, g.Control("tcp6", "[::ffff:8.8.8.8]:443", nil))
	require.NoError(t, g.CheckURL(context.Background(), "https://[2606:4700:4700::1111]/"))
}
