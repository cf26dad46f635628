// Package signing makes and checks Standard Webhooks signatures: `v1,` + base64
// HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>` keyed by the decoded
// `whsec_` secret (https://www.standardwebhooks.com).
package signing

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// ErrBadSecret means a secret is not `whsec_` followed by base64 of 24 to 64 bytes.
var ErrBadSecret = errors.New("signing secret must be whsec_ + base64 of 24 to 64 bytes")

// NewSecret returns a fresh `whsec_` secret of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// Signer signs with one decoded secret. Safe for concurrent use.
type Signer struct{ key []byte }

// NewSigner decodes secret; it returns ErrBadSecret for a malformed one.
func NewSigner(secret string) (*Signer, error) {
	raw, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, ErrBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) < 24 || len(key) > 64 {
		return nil, ErrBadSecret
	}
	return &Signer{key: key}, nil
}

// Sign returns the `webhook-signature` value for id, timestamp (Unix s) and body.
func (s *Signer) Sign(id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, timestamp, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify reports whether any space-separated `v1,` signature in header matches.
// It does not check the timestamp's age; callers do.
func (s *Signer) Verify(id string, timestamp int64, body []byte, header string) bool {
	want := s.Sign(id, timestamp, body)
	for _, sig := range strings.Fields(header) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}
