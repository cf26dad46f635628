// Package auth holds Herald's credentials: publisher API keys, bcrypt user passwords
// and the HS256 JWTs the admin API and the console share. It is a leaf: it knows no
// transport and no SQL.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewAPIKey returns a fresh key `hk_<prefix>_<secret>` (32 random bytes of secret),
// its prefix and the SHA-256 to store. Keys are random, so a fast hash is right; a
// slow KDF would only tax every publish (DESIGN §8).
func NewAPIKey() (key, prefix string, hash []byte) {
	p := make([]byte, 5)
	sec := make([]byte, 32)
	_, _ = rand.Read(p)
	_, _ = rand.Read(sec)
	prefix = strings.ToLower(keyEncoding.EncodeToString(p))
	key = "hk_" + prefix + "_" + strings.ToLower(keyEncoding.EncodeToString(sec))
	sum := sha256.Sum256([]byte(key))
	return key, prefix, sum[:]
}
