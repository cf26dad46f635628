package pushauth

import (
	"crypto/ed25519"
	"encoding/base64"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

func TestSignVerifiesWithPublishedKey(t *testing.T) {
	t.Parallel()
	k := NewKey()
	s, err := NewSigner(k, "https://herald.example")
	require.NoError(t, err)
	now := time.Now()
	tok, err := s.Sign("https://rx.example/hook", "billing", "msg_1_2", now)
	require.NoError(t, err)

	set := PublicJWKS([]models.PushKey{k})
	require.Len(t, set.Keys, 1)
	x, err := base64.RawURLEncoding.DecodeString(set.Keys[0].X)
	require.NoError(t, err)
	var c Claims
	_, err = jwt.ParseWithClaims(tok, &c, func(t *jwt.Token) (any, error) { return ed25519.PublicKey(x), nil },
		jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithAudience("https://rx.example/hook"), jwt.WithIssuer("https://herald.example"))
	require.NoError(t, err)
	require.Equal(t, "billing", c.Subject)
	require.Equal(t, "msg_1_2", c.ID)
	require.LessOrEqual(t, c.ExpiresAt.Sub(c.IssuedAt.Time), time.Hour)
}

func TestNewSignerRefusesShortSeed(t *testing.T) {
	t.Parallel()
	k := NewKey()
	k.Seed = k.Seed[:16]
	_, err := NewSigner(k, "x")
	require.Error(t, err)
	require.Empty(t, PublicJWKS([]models.PushKey{k}).Keys)
}

// BenchmarkSign is the cost of one push token, made before each POST of a group with
// push auth.
func BenchmarkSign(b *testing.B) {
	s, err := NewSigner(NewKey(), "https://herald.example")
	require.NoError(b, err)
	now := time.Now()
	for b.Loop() {
		if _, err := s.Sign("https://rx.example/hook", "billing", "msg_1_2", now); err != nil {
			b.Fatal(err)
		}
	}
}
