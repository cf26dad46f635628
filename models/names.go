package models

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// DeadLetterSuffix ends every dead-letter topic name (`<group>.dlq`). It is reserved:
// users cannot create such topics, API-key patterns never match them and /v1 refuses
// to publish to them (a reserved suffix, as Pub/Sub dead-letter topics and RocketMQ's %DLQ%).
const DeadLetterSuffix = ".dlq"

// MaxLabelBytes caps tags and keys: 255 bytes of UTF-8.
const MaxLabelBytes = 255

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,119}$`)

// ValidName reports whether s may name a topic or consumer group:
// `^[a-z0-9][a-z0-9._-]{0,119}$`. It does not check the reserved `.dlq` suffix; see ReservedName.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// ReservedName reports whether s ends with the reserved dead-letter suffix ".dlq".
func ReservedName(s string) bool { return strings.HasSuffix(s, DeadLetterSuffix) }

// ValidLabel reports whether s may be a tag or key: valid UTF-8, at most 255 bytes,
// no control characters (IsControl: C0, DEL or C1) and no leading or trailing space (tags and
// keys travel in HTTP headers, which would trim them). The empty string is valid
// (no tag / no key).
func ValidLabel(s string) bool {
	return len(s) <= MaxLabelBytes && utf8.ValidString(s) && !HasControl(s) && !strings.HasPrefix(s, " ") && !strings.HasSuffix(s, " ")
}

// MaxStoredNameBytes is the longest topic or group name that can be stored: a group
// name (120 bytes) plus DeadLetterSuffix.
const MaxStoredNameBytes = 124

// PossibleName reports whether s could name a stored topic or group: 1 to
// MaxStoredNameBytes of lower-case ASCII letters, digits, '.', '_' and '-', starting
// with a letter or digit. Anything else cannot exist, so lookups refuse it before
// SQL, where a non-ASCII value against the ASCII name columns fails with "Illegal
// mix of collations" instead of finding nothing.
func PossibleName(s string) bool {
	if s == "" || len(s) > MaxStoredNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b >= 'a' && b <= 'z', b >= '0' && b <= '9':
		case (b == '.' || b == '_' || b == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
