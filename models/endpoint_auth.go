package models

import (
	"net/url"
	"sort"
	"strings"
	"time"
)

// PushAuth makes the worker add `Authorization: Bearer <JWT>` to each POST of a group,
// as Pub/Sub push's OIDC tokens: an EdDSA JWT signed with Herald's push key (published
// at /.well-known/jwks.json) with claims iss (HERALD_PUBLIC_URL), aud (Audience, or
// the endpoint URL when empty), sub (the group name), iat, exp (iat + PushTokenLifetime)
// and jti (the POST's webhook-id). A nil *PushAuth on a Group means off (the default).
type PushAuth struct {
	Audience string
}

// PushTokenLifetime is how long a push JWT is valid after it is made: 15 min, well
// under the 1 h that Pub/Sub push uses. A retired push key stays in the JWKS at least
// this long (plus PushKeyCacheSlack) after it stops signing.
const PushTokenLifetime = 15 * time.Minute

// PushKeyCacheSlack covers a worker's cached signing key after a rotation (workers
// reload keys every few seconds) when retired keys leave the JWKS.
const PushKeyCacheSlack = time.Minute

// PushKey is one of Herald's push-JWT signing keys: ID is the JWK `kid`, Seed the
// 32-byte Ed25519 private key seed (crypto/ed25519.NewKeyFromSeed). The newest key
// without RetiredAt signs; a retired key is published until RetiredAt +
// PushTokenLifetime + PushKeyCacheSlack.
type PushKey struct {
	ID        string
	Seed      []byte
	CreatedAt time.Time
	RetiredAt *time.Time
}

// BasicAuth is an endpoint's HTTP basic credentials (RFC 7617), for receivers that
// cannot verify signatures. Password is write-only: reads show it masked.
type BasicAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// EndpointAuth is what a group adds to every POST besides Herald's own headers:
// static Headers (names in CanonicalHeaderName form, i.e. lower case; values
// write-only, e.g. an X-Api-Key) and
// optional Basic credentials. It is sealed at rest as one document.
type EndpointAuth struct {
	Headers map[string]string `json:"headers,omitempty"`
	Basic   *BasicAuth        `json:"basic,omitempty"`
}

// Empty reports whether a carries nothing to send.
func (a EndpointAuth) Empty() bool { return len(a.Headers) == 0 && a.Basic == nil }

// MaskedValue replaces every write-only value in reads (API, console, audit log).
const MaskedValue = "********"

// Masked returns a copy of a whose header values and password read MaskedValue.
func (a EndpointAuth) Masked() EndpointAuth {
	out := EndpointAuth{}
	if len(a.Headers) > 0 {
		out.Headers = make(map[string]string, len(a.Headers))
		for k := range a.Headers {
			out.Headers[k] = MaskedValue
		}
	}
	if a.Basic != nil {
		out.Basic = &BasicAuth{Username: a.Basic.Username, Password: MaskedValue}
	}
	return out
}

// HeaderNames returns a's header names, sorted.
func (a EndpointAuth) HeaderNames() []string {
	out := make([]string, 0, len(a.Headers))
	for k := range a.Headers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MaxEndpointHeaders caps a group's static headers; each value is at most 4 KiB.
const (
	MaxEndpointHeaders     = 20
	MaxEndpointHeaderBytes = 4 << 10
)

// ReservedEndpointHeader reports whether a group may not set header name (lower
// case) because Herald sets it itself: webhook-*, herald-*, content-type,
// traceparent, user-agent, authorization (sent by basic or push auth; static
// headers never carry it), and the connection-level headers Go's client owns.
func ReservedEndpointHeader(name string) bool {
	if strings.HasPrefix(name, "webhook-") || strings.HasPrefix(name, "herald-") {
		return true
	}
	switch name {
	case "content-type", "content-length", "content-encoding", "traceparent", "tracestate", "user-agent",
		"authorization", "host", "connection", "transfer-encoding", "te", "trailer", "upgrade",
		"keep-alive", "proxy-authorization", "proxy-connection", "expect", "cookie":
		return true
	}
	return false
}

// validateEndpointAuth adds field errors for g's push auth, headers and basic auth:
// reserved or malformed names, values with control characters, too many or too long
// headers, a basic username with ':' and push auth together with basic auth (both
// would send Authorization).
func (g *Group) validateEndpointAuth(v *ValidationError) {
	if g.PushAuth != nil && g.PushAuth.Audience != "" {
		if len(g.PushAuth.Audience) > 2048 || !ValidHeaderValue(g.PushAuth.Audience) {
			v.Add("/push_auth/audience", "must be up to 2048 bytes of UTF-8 without control characters")
		}
	}
	a := g.EndpointAuth
	if len(a.Headers) > MaxEndpointHeaders {
		v.Add("/endpoint_headers", "at most "+itoa(MaxEndpointHeaders)+" headers")
	}
	for _, name := range a.HeaderNames() {
		p := "/endpoint_headers/" + strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
		switch {
		case !ValidHeaderName(name):
			v.Add(p, "header names are HTTP tokens of 1 to 128 bytes")
		case name != CanonicalHeaderName(name):
			v.Add(p, "this name is given twice (header names are case-insensitive)")
		case ReservedEndpointHeader(name):
			v.Add(p, "Herald sets this header itself; it cannot be overridden")
		case len(a.Headers[name]) > MaxEndpointHeaderBytes || !ValidHeaderValue(a.Headers[name]):
			v.Add(p, "values are up to 4096 bytes of UTF-8 without control characters")
		}
	}
	if b := a.Basic; b != nil {
		if b.Username == "" || strings.Contains(b.Username, ":") || len(b.Username) > 255 || !ValidHeaderValue(b.Username) {
			v.Add("/basic_auth/username", "must be 1 to 255 bytes of UTF-8 without ':' or control characters")
		}
		if len(b.Password) > 1024 || !ValidHeaderValue(b.Password) {
			v.Add("/basic_auth/password", "must be up to 1024 bytes of UTF-8 without control characters")
		}
		if g.PushAuth != nil {
			v.Add("/basic_auth", "basic auth and push auth both send Authorization; choose one")
		}
	}
}

// PushAudience returns the `aud` claim of g's push tokens: the configured audience,
// or the endpoint URL without its query string and fragment.
func (g *Group) PushAudience() string {
	if g.PushAuth != nil && g.PushAuth.Audience != "" {
		return g.PushAuth.Audience
	}
	if u, err := url.Parse(g.EndpointURL); err == nil {
		u.RawQuery, u.Fragment = "", ""
		return u.String()
	}
	return g.EndpointURL
}
