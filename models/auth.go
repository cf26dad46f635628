package models

import (
	"path"
	"slices"
	"strings"
	"time"
)

// Role is a console or admin-API user's role.
type Role string

const (
	// RoleAdmin may do everything, including managing users and reading the audit log.
	RoleAdmin Role = "admin"
	// RoleOperator manages topics, groups, keys and dead letters.
	RoleOperator Role = "operator"
	// RoleViewer reads only.
	RoleViewer Role = "viewer"
)

// Roles lists every Role.
func Roles() []Role { return []Role{RoleAdmin, RoleOperator, RoleViewer} }

// ValidRole reports whether r is a known role.
func ValidRole(r Role) bool { return slices.Contains(Roles(), r) }

// roleRank orders the roles by privilege: viewer < operator < admin.
var roleRank = map[Role]int{RoleViewer: 1, RoleOperator: 2, RoleAdmin: 3}

// AtLeast reports whether r is as privileged as min or more (an unknown role is
// below every known one).
func (r Role) AtLeast(min Role) bool { return roleRank[r] >= roleRank[min] && roleRank[r] > 0 }

// User is a person who logs into the console or admin API. PasswordHash is bcrypt;
// TokenVersion is embedded in JWTs and bumped to revoke them all.
type User struct {
	ID           int64
	Username     string
	PasswordHash string
	Role         Role
	TokenVersion int64
	CreatedAt    time.Time
}

// APIKey is a publisher credential `hk_<prefix>_<secret>`. Only the SHA-256 of the
// whole key is stored (Hash); Topics are glob patterns (`*` matches any run of
// characters, as path.Match) naming the topics it may publish to.
type APIKey struct {
	ID         int64
	Name       string
	Prefix     string
	Hash       []byte
	Topics     []string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Allows reports whether the key may publish to topic. Patterns never match
// dead-letter topics, which /v1 refuses anyway, nor Herald's EventsTopic.
func (k *APIKey) Allows(topic string) bool {
	if ReservedName(topic) || topic == EventsTopic {
		return false
	}
	for _, p := range k.Topics {
		if ok, err := path.Match(p, topic); err == nil && ok {
			return true
		}
	}
	return false
}

// ValidTopicPattern reports whether p is a usable API-key scope: a topic name in which
// `*` may stand for any run of characters.
func ValidTopicPattern(p string) bool {
	if p == "*" {
		return true
	}
	if _, err := path.Match(p, ""); err != nil || p == "" || len(p) > 120 {
		return false
	}
	for _, r := range p {
		if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789._-*", r) {
			return false
		}
	}
	return true
}

// MaxUsernameBytes caps usernames: 120 bytes of UTF-8.
const MaxUsernameBytes = 120

// ValidUsername reports whether s may name a user: 1 to MaxUsernameBytes bytes of
// valid UTF-8, no control characters, and no leading or trailing white space, so
// that "admin" and "admin " can never be two spellings of one account (the column
// compares bytes, without padding).
func ValidUsername(s string) bool {
	return s != "" && len(s) <= MaxUsernameBytes && ValidLabel(s) && strings.TrimSpace(s) == s
}

// UsernameKey is the form of a submitted username that login throttles count
// under: trimmed of white space and lower-cased, so padding or case cannot give one
// account a fresh allowance.
func UsernameKey(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// ValidKeyPrefix reports whether p could be an API key's prefix: 1 to 32 bytes of
// lower-case base32 (a-z, 2-7), as NewAPIKey makes them. Anything else cannot be
// stored, so it is refused before SQL sees it.
func ValidKeyPrefix(p string) bool {
	if p == "" || len(p) > 32 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if b := p[i]; (b < 'a' || b > 'z') && (b < '2' || b > '7') {
			return false
		}
	}
	return true
}
