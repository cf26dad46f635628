package control

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/heraldhq/herald/models"
)

// BasicAuthDropped names basic auth in the list of endpoint auth a change of
// receiver dropped (PatchGroupWith), beside the header names.
const BasicAuthDropped = "basic_auth"

// sameReceiver reports whether stored endpoint auth may follow an endpoint from
// URL from to URL to: the same host (case-insensitive) and port, the scheme the
// same or raised from http to https on the default ports. Another host, another
// port or a fall from https to http is another receiver (RFC 6454's origin, with
// the upgrade allowed).
func sameReceiver(from, to string) bool {
	f, err1 := url.Parse(from)
	t, err2 := url.Parse(to)
	if err1 != nil || err2 != nil || !strings.EqualFold(f.Hostname(), t.Hostname()) {
		return false
	}
	fs, ts := strings.ToLower(f.Scheme), strings.ToLower(t.Scheme)
	if fs == ts {
		return portOf(f) == portOf(t)
	}
	return fs == "http" && ts == "https" && portOf(f) == "80" && portOf(t) == "443"
}

// portOf is u's port, the scheme's default when none is written.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// keptAuth resolves what spec does with the stored endpoint auth when it moves the
// endpoint from URL from to another receiver (sameReceiver): the values it leaves masked
// (models.MaskedValue, "keep the stored one") are dropped, so a credential stored
// for one host never goes to another its writer did not name, unless
// spec.KeepEndpointAuth, which only an admin may ask (models.ErrForbidden). Values
// the spec gives in clear stay. It returns the spec to apply and the names of what
// it dropped (header names, then BasicAuthDropped), sorted; nothing changes when
// the receiver stays.
func keptAuth(a Actor, from string, spec GroupSpec) (GroupSpec, []string, error) {
	if sameReceiver(from, spec.EndpointURL) {
		return spec, nil, nil
	}
	if spec.KeepEndpointAuth {
		if a.Role != models.RoleAdmin {
			return spec, nil, fmt.Errorf("%w: keeping the stored endpoint auth for another host needs role admin; enter the values again instead", models.ErrForbidden)
		}
		return spec, nil, nil
	}
	var dropped []string
	if len(spec.EndpointHeaders) > 0 {
		headers := make(map[string]string, len(spec.EndpointHeaders))
		for k, v := range spec.EndpointHeaders {
			if v == models.MaskedValue {
				dropped = append(dropped, models.CanonicalHeaderName(k))
				continue
			}
			headers[k] = v
		}
		spec.EndpointHeaders = headers
	}
	slices.Sort(dropped)
	if b := spec.BasicAuth; b != nil && b.Password == models.MaskedValue {
		spec.BasicAuth = nil
		dropped = append(dropped, BasicAuthDropped)
	}
	return spec, dropped, nil
}
