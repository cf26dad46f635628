// Package secrets encrypts secrets at rest: signing secrets and other
// credentials Herald must read back are sealed with AES-256-GCM under a key from
// HERALD_ENCRYPTION_KEY. A sealed value names its key id, so the key can be rotated:
// put the old key in HERALD_ENCRYPTION_OLD_KEYS, and values sealed under it still
// open while new ones are sealed under the new key.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// SealedPrefix starts every sealed value: `enc:v1:<key id>:<base64url(nonce ‖ ciphertext)>`.
// A stored value without it is plaintext written before encryption was enabled.
const SealedPrefix = "enc:v1:"

// aad binds sealed values to Herald's format, so a blob from another GCM user cannot pass.
var aad = []byte("herald-secret-v1")

var (
	// ErrBadKey means a key is not 32 bytes given as 64 hex characters or base64.
	ErrBadKey = errors.New("encryption key must be 32 bytes as 64 hex characters or base64")
	// ErrUnknownKey means a sealed value names a key id the Keyring does not hold.
	ErrUnknownKey = errors.New("sealed with an unknown encryption key")
	// ErrCorrupt means a sealed value is malformed or fails authentication.
	ErrCorrupt = errors.New("sealed value is corrupt or was tampered with")
)

// Keyring seals with one primary key and opens with it or any older key. The zero
// value and a nil *Keyring hold no key: Seal then stores plaintext and Open fails on
// sealed values with ErrUnknownKey. Safe for concurrent use.
type Keyring struct {
	primary string
	keys    map[string]cipher.AEAD
}

// ParseKeyring builds a Keyring from the primary key and older keys (each 32 bytes as
// 64 hex characters or standard/URL base64). An empty primary gives a Keyring that
// holds no key. Errors wrap ErrBadKey.
func ParseKeyring(primary string, old []string) (*Keyring, error) {
	k := &Keyring{keys: map[string]cipher.AEAD{}}
	if strings.TrimSpace(primary) == "" {
		return k, nil
	}
	for i, raw := range append([]string{primary}, old...) {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		key, err := decodeKey(raw)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		block, _ := aes.NewCipher(key)
		aead, _ := cipher.NewGCM(block)
		id := KeyID(key)
		if i == 0 {
			k.primary = id
		}
		k.keys[id] = aead
	}
	return k, nil
}

func decodeKey(raw string) ([]byte, error) {
	if b, err := hex.DecodeString(raw); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(raw); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, ErrBadKey
}

// KeyID names a key without revealing it: the first 8 hex characters of its SHA-256.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

// Enabled reports whether the Keyring has a primary key to seal with.
func (k *Keyring) Enabled() bool { return k != nil && k.primary != "" }

// PrimaryID returns the primary key's id, or "" when none is set.
func (k *Keyring) PrimaryID() string {
	if k == nil {
		return ""
	}
	return k.primary
}

// Seal encrypts plaintext under the primary key with a fresh 96-bit nonce. Without a
// primary key it returns plaintext unchanged (encryption disabled). The empty string
// stays empty, so "no secret" needs no key.
func (k *Keyring) Seal(plaintext string) string {
	if !k.Enabled() || plaintext == "" {
		return plaintext
	}
	aead := k.keys[k.primary]
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := aead.Seal(nonce, nonce, []byte(plaintext), aad)
	return SealedPrefix + k.primary + ":" + base64.RawURLEncoding.EncodeToString(out)
}

// Open returns the plaintext of a stored value: a sealed value is decrypted with the
// key it names; anything else is plaintext written before encryption and returned as
// is. Errors wrap ErrUnknownKey or ErrCorrupt.
func (k *Keyring) Open(stored string) (string, error) {
	rest, ok := strings.CutPrefix(stored, SealedPrefix)
	if !ok {
		return stored, nil
	}
	id, blob, ok := strings.Cut(rest, ":")
	if !ok {
		return "", ErrCorrupt
	}
	var aead cipher.AEAD
	if k != nil {
		aead = k.keys[id]
	}
	if aead == nil {
		return "", fmt.Errorf("key id %s: %w", id, ErrUnknownKey)
	}
	raw, err := base64.RawURLEncoding.DecodeString(blob)
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return "", ErrCorrupt
	}
	pt, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], aad)
	if err != nil {
		return "", ErrCorrupt
	}
	return string(pt), nil
}

// Current reports whether stored is already in the form Seal would write now: sealed
// under the primary key, or plaintext when encryption is disabled. Values that are
// not current are resealed at start-up.
func (k *Keyring) Current(stored string) bool {
	if stored == "" {
		return true
	}
	if !k.Enabled() {
		return !strings.HasPrefix(stored, SealedPrefix)
	}
	return strings.HasPrefix(stored, SealedPrefix+k.primary+":")
}
