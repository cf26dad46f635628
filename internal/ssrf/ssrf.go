// Package ssrf keeps deliveries away from private networks: endpoint addresses that
// are loopback, private, link-local, CGNAT, metadata or translation ranges are
// refused, both when a URL is saved and on the IP actually dialled.
package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
)

// ErrBlocked means an endpoint resolves to an address Herald refuses to call.
var ErrBlocked = errors.New("blocked destination")

// blocked4 are the refused IPv4 ranges (RFC 6890 special-purpose blocks that are not
// globally reachable, plus the documentation nets).
var blocked4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// blocked6 are the refused IPv6 ranges. Every range that embeds an IPv4 address
// (IPv4-compatible ::/96, SIIT ::ffff:0:0:0/96, NAT64 64:ff9b::/96 and
// 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32) is refused whole, so no
// embedding of a private IPv4 can slip through; IPv4-mapped ::ffff:0:0/96 is not
// listed because Blocked judges it by its IPv4 form.
var blocked6 = []netip.Prefix{
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("::ffff:0:0:0/96"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("fec0::/10"),
	netip.MustParsePrefix("ff00::/8"),
}

// Blocked reports whether ip lies in a refused range. An address with an IPv6 zone
// (`fe80::1%eth0`, `::1%lo`) is always refused: a zone only makes sense for
// link-local and loopback destinations, and netip.Prefix.Contains never matches a
// zoned address, so it must not reach the range checks. IPv4-mapped addresses
// (`::ffff:a.b.c.d`, what Go's resolver returns for an /etc/hosts IPv4) are judged
// by their IPv4 form alone.
func Blocked(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return true
	}
	ip = ip.Unmap()
	list := blocked6
	if ip.Is4() {
		list = blocked4
	}
	for _, p := range list {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Guard checks endpoint addresses unless AllowPrivate is set.
type Guard struct {
	// AllowPrivate permits every address (HERALD_ALLOW_PRIVATE_ENDPOINTS, tests and `make run`).
	AllowPrivate bool
	// Resolver looks hosts up; nil means net.DefaultResolver.
	Resolver *net.Resolver
}

// CheckURL resolves the URL's host and returns an error wrapping ErrBlocked if any
// address is refused. Used when an endpoint is created or changed.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	if g.AllowPrivate {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if Blocked(ip) {
			return fmt.Errorf("%s: %w", host, ErrBlocked)
		}
		return nil
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, a := range addrs {
		if Blocked(a) {
			return fmt.Errorf("%s resolves to %s: %w", host, a, ErrBlocked)
		}
	}
	return nil
}

// Control is a net.Dialer Control function that refuses blocked connected IPs, so DNS
// rebinding cannot slip past CheckURL.
func (g Guard) Control(network, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%s: %w", address, ErrBlocked)
	}
	if Blocked(ap.Addr()) {
		return fmt.Errorf("%s: %w", address, ErrBlocked)
	}
	return nil
}
