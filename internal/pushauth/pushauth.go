// Package pushauth makes the push tokens Herald adds to POSTs of groups with push
// auth on (as Pub/Sub push's OIDC tokens): Ed25519-signed JWTs (alg EdDSA, header
// kid) whose public keys Herald publishes as a JWKS (RFC 7517, OKP keys of RFC 8037)
// at /.well-known/jwks.json. Keys are models.PushKey values kept by models/store.
package pushauth

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/heraldhq/herald/models"
)

// NewKey returns a fresh push key; its kid is derived from the public key (the first
// 16 base64url characters of its SHA-256), so it names the key without revealing it.
func NewKey() models.PushKey {
	seed := make([]byte, ed25519.SeedSize)
	_, _ = rand.Read(seed)
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	return models.PushKey{ID: base64.RawURLEncoding.EncodeToString(sum[:])[:16], Seed: seed}
}

// Signer signs push tokens with one key. Safe for concurrent use.
type Signer struct {
	kid    string
	key    ed25519.PrivateKey
	issuer string
}

// NewSigner returns a Signer for k with issuer as the `iss` claim (HERALD_PUBLIC_URL).
// It returns an error when k's seed is not 32 bytes.
func NewSigner(k models.PushKey, issuer string) (*Signer, error) {
	if len(k.Seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("push key %s: seed is %d bytes, want %d", k.ID, len(k.Seed), ed25519.SeedSize)
	}
	return &Signer{kid: k.ID, key: ed25519.NewKeyFromSeed(k.Seed), issuer: issuer}, nil
}

// KeyID returns the signing key's kid.
func (s *Signer) KeyID() string { return s.kid }

// Claims are one push token's claims: the registered ones (iss, aud, sub, iat, exp,
// jti) and nothing else.
type Claims = jwt.RegisteredClaims

// Sign returns a compact JWT for a POST made at now: aud audience, sub the group
// name, jti the POST's webhook-id, exp now + models.PushTokenLifetime.
func (s *Signer) Sign(audience, group, webhookID string, now time.Time) (string, error) {
	c := Claims{
		Issuer:    s.issuer,
		Subject:   group,
		Audience:  jwt.ClaimStrings{audience},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(models.PushTokenLifetime)),
		ID:        webhookID,
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	t.Header["kid"] = s.kid
	out, err := t.SignedString(s.key)
	if err != nil {
		return "", fmt.Errorf("sign push token: %w", err)
	}
	return out, nil
}

// JWK is one public key in a JWKS (RFC 8037 OKP, Ed25519).
type JWK struct {
	KeyType string `json:"kty"`
	Curve   string `json:"crv"`
	X       string `json:"x"`
	KeyID   string `json:"kid"`
	Alg     string `json:"alg"`
	Use     string `json:"use"`
}

// JWKS is the document served at /.well-known/jwks.json.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// PublicJWKS returns the public halves of keys as a JWKS, in the order given. Keys
// with a malformed seed are left out.
func PublicJWKS(keys []models.PushKey) JWKS {
	out := JWKS{Keys: []JWK{}}
	for _, k := range keys {
		if len(k.Seed) != ed25519.SeedSize {
			continue
		}
		pub := ed25519.NewKeyFromSeed(k.Seed).Public().(ed25519.PublicKey)
		out.Keys = append(out.Keys, JWK{KeyType: "OKP", Curve: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub), KeyID: k.ID, Alg: "EdDSA", Use: "sig"})
	}
	return out
}
