// Package auth holds Herald's credentials logic without HTTP: publisher API keys
// (apikeys.go) and operator passwords (passwords.go). The api role, the console and
// the CLI share it; it imports only the standard library, x/crypto and models.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"strings"

	"github.com/heraldhq/herald/models"
)

// APIKeyPrefixMax is the longest prefix ParseAPIKey accepts (characters).
const APIKeyPrefixMax = 32

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewAPIKey returns a fresh key `hk_<prefix>_<secret>` (5 random bytes of prefix,
// 32 of secret, lower-case base32), its prefix (the lookup id) and the SHA-256 to
// store. Keys are random, so a fast hash is right; a slow KDF would only tax every
// publish (bcrypt took 106 ms per check here).
func NewAPIKey() (key, prefix string, hash []byte) {
	p := make([]byte, 5)
	sec := make([]byte, 32)
	_, _ = rand.Read(p)
	_, _ = rand.Read(sec)
	prefix = strings.ToLower(keyEncoding.EncodeToString(p))
	key = "hk_" + prefix + "_" + strings.ToLower(keyEncoding.EncodeToString(sec))
	return key, prefix, HashAPIKey(key)
}

// ParseAPIKey returns the prefix of a key shaped `hk_<prefix>_<secret>`; ok is false
// when the shape is wrong or the prefix is empty or longer than APIKeyPrefixMax. It
// does not check the secret: compare with APIKeyMatches.
func ParseAPIKey(key string) (prefix string, ok bool) {
	rest, ok := strings.CutPrefix(key, "hk_")
	prefix, _, ok2 := strings.Cut(rest, "_")
	// A prefix that cannot exist (not lower-case base32) never reaches the database.
	if !ok || !ok2 || len(prefix) > APIKeyPrefixMax || !models.ValidKeyPrefix(prefix) {
		return "", false
	}
	return prefix, true
}

// HashAPIKey is the SHA-256 of key, as stored in api_keys.hash.
func HashAPIKey(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// APIKeyMatches reports whether key hashes to stored, in constant time.
func APIKeyMatches(key string, stored []byte) bool {
	return subtle.ConstantTimeCompare(HashAPIKey(key), stored) == 1
}
