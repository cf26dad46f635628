package auth

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/crypto/bcrypt"

	"github.com/heraldhq/herald/models"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAPIKeyRoundTrip(t *testing.T) {
	t.Parallel()
	key, prefix, hash := NewAPIKey()
	require.True(t, strings.HasPrefix(key, "hk_"+prefix+"_"))
	got, ok := ParseAPIKey(key)
	require.True(t, ok)
	require.Equal(t, prefix, got)
	require.True(t, APIKeyMatches(key, hash))
	require.False(t, APIKeyMatches(key+"x", hash))
	other, _, _ := NewAPIKey()
	require.NotEqual(t, key, other)
}

func TestParseAPIKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		prefix string
		ok     bool
	}{
		{"hk_abc_def", "abc", true},
		{"hk_abc_", "abc", true},
		{"hk__def", "", false},
		{"hk_abc", "", false},
		{"abc_def", "", false},
		{"", "", false},
		{"hk_" + strings.Repeat("a", APIKeyPrefixMax) + "_s", strings.Repeat("a", APIKeyPrefixMax), true},
		{"hk_" + strings.Repeat("a", APIKeyPrefixMax+1) + "_s", "", false},
	} {
		p, ok := ParseAPIKey(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.prefix, p, tc.in)
	}
}

// TestHashPasswordCost: the cost is a parameter, so tests hash cheaply in parallel
// without touching shared state, and 0 means the default.
func TestHashPasswordCost(t *testing.T) {
	t.Parallel()
	h, err := HashPassword("correct horse", bcrypt.MinCost)
	require.NoError(t, err)
	cost, err := bcrypt.Cost([]byte(h))
	require.NoError(t, err)
	require.Equal(t, bcrypt.MinCost, cost)
	require.True(t, CheckPassword(h, "correct horse"))
	require.False(t, CheckPassword(h, "wrong horse"))

	var v *models.ValidationError
	for _, pw := range []string{"short", strings.Repeat("x", PasswordMaxBytes+1)} {
		_, err := HashPassword(pw, bcrypt.MinCost)
		require.True(t, errors.As(err, &v), pw)
		require.Equal(t, "/password", v.Errors[0].Pointer)
	}
}
