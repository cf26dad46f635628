package models

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// IsControl reports whether r is a control character: C0 (U+0000–U+001F), DEL
// (U+007F) or C1 (U+0080–U+009F), Unicode's Cc category. It is Herald's one
// control-character rule: labels, usernames, API-key names and header values all
// refuse these (header values keep HTAB, which RFC 9110 §5.5 allows inside a field
// value).
func IsControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// HasControl reports whether s holds a control character (IsControl), tab included.
// Bytes that are not UTF-8 are not control characters; check utf8.ValidString too.
func HasControl(s string) bool {
	for _, r := range s {
		if IsControl(r) {
			return true
		}
	}
	return false
}

// Padded reports whether s starts or ends with a space or tab, which an HTTP header
// would lose in transit (RFC 9110 §5.5 trims them).
func Padded(s string) bool {
	return s != "" && (s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t')
}

// ValidHeaderValue reports whether s may be sent as an HTTP header value unchanged:
// valid UTF-8 without control characters (IsControl) other than tab. Length and
// padding rules are the caller's (message headers also refuse Padded values).
func ValidHeaderValue(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if IsControl(r) && r != '\t' {
			return false
		}
	}
	return true
}

// MaxHeaderNameBytes caps an HTTP header name Herald stores (a group's static
// headers; message header names are at most 64 bytes by ValidMessageHeaderName).
const MaxHeaderNameBytes = 128

// CanonicalHeaderName is the one form in which Herald stores, compares and shows an
// HTTP header name: ASCII lower case (header names are case-insensitive, RFC 9110
// §5.1; HTTP/2 and HTTP/3 send them in lower case). `X-Api-Key` and `x-api-key` are
// one name, stored as `x-api-key`. On the wire Go's HTTP/1.1 client writes the
// canonical MIME form (`X-Api-Key`); receivers must compare names case-insensitively.
func CanonicalHeaderName(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + ('a' - 'A')
				}
			}
			return string(b)
		}
	}
	return s
}

// ValidHeaderName reports whether s is an HTTP header name Herald accepts, in any
// case: an RFC 9110 token (letters, digits and !#$%&'*+-.^_`|~) of 1 to
// MaxHeaderNameBytes bytes.
func ValidHeaderName(s string) bool {
	if s == "" || len(s) > MaxHeaderNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

var messageHeaderNameRE = regexp.MustCompile(`^x-[a-z0-9][a-z0-9-]{0,62}$`)

// ValidMessageHeaderName reports whether s may name a header of a published
// message, in any case: `x-` then a letter or digit and up to 62 more letters,
// digits and dashes (at most 64 bytes). Every other name is Herald's own (webhook-*,
// herald-*, content-type …) and reserved. Store it as CanonicalHeaderName(s).
func ValidMessageHeaderName(s string) bool {
	return len(s) <= 64 && messageHeaderNameRE.MatchString(CanonicalHeaderName(s))
}

// CanonicalHeaders returns h with every name in CanonicalHeaderName form, values
// unchanged. A name whose canonical form is also given (`X-A` next to `x-a`) keeps
// its own spelling, so validation refuses it as a duplicate instead of one value
// silently replacing the other. A nil or empty h returns h. V is any value type
// (a JSON merge patch's members are any, with null to remove a header).
func CanonicalHeaders[V any](h map[string]V) map[string]V {
	if len(h) == 0 {
		return h
	}
	out := make(map[string]V, len(h))
	for k, v := range h { // canonical spellings first, so they always win their name
		if CanonicalHeaderName(k) == k {
			out[k] = v
		}
	}
	for k, v := range h {
		if c := CanonicalHeaderName(k); c != k {
			if _, taken := out[c]; taken {
				out[k] = v
			} else {
				out[c] = v
			}
		}
	}
	return out
}
