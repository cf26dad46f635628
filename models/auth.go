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
