package secrets

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	keyA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	keyB = "IBxZ0DCY6OKkK7ycbfQ1rfIq4DJ+Yh1N2AU2F5HkE4A="
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	k, err := ParseKeyring(keyA, nil)
	require.NoError(t, err)
	require.True(t, k.Enabled())
	s := k.Seal("whsec_abc")
	require.True(t, strings.HasPrefix(s, SealedPrefix+k.PrimaryID()+":"))
	require.NotEqual(t, s, k.Seal("whsec_abc"), "fresh nonce per seal")
	got, err := k.Open(s)
	require.NoError(t, err)
	require.Equal(t, "whsec_abc", got)
	require.True(t, k.Current(s))
	require.False(t, k.Current("whsec_plain"))

	plain, err := k.Open("whsec_plain")
	require.NoError(t, err, "plaintext rows from before encryption still read")
	require.Equal(t, "whsec_plain", plain)
	require.Empty(t, k.Seal(""))
}

func TestRotation(t *testing.T) {
	t.Parallel()
	oldK, err := ParseKeyring(keyA, nil)
	require.NoError(t, err)
	sealed := oldK.Seal("whsec_old")
	newK, err := ParseKeyring(keyB, []string{keyA})
	require.NoError(t, err)
	got, err := newK.Open(sealed)
	require.NoError(t, err)
	require.Equal(t, "whsec_old", got)
	require.False(t, newK.Current(sealed), "sealed under an old key: reseal")

	onlyNew, err := ParseKeyring(keyB, nil)
	require.NoError(t, err)
	_, err = onlyNew.Open(sealed)
	require.ErrorIs(t, err, ErrUnknownKey)
	var none *Keyring
	_, err = none.Open(sealed)
	require.ErrorIs(t, err, ErrUnknownKey)
	require.Equal(t, "x", none.Seal("x"), "no key: plaintext")
}

func TestTamperAndBadKeys(t *testing.T) {
	t.Parallel()
	k, err := ParseKeyring(keyA, nil)
	require.NoError(t, err)
	s := k.Seal("whsec_abc")
	b := []byte(s)
	b[len(b)-3] ^= 'A' ^ 'B'
	_, err = k.Open(string(b))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = k.Open(SealedPrefix + k.PrimaryID() + ":@@")
	require.ErrorIs(t, err, ErrCorrupt)
	for _, bad := range []string{"short", strings.Repeat("z", 64), keyA[:62]} {
		_, err := ParseKeyring(bad, nil)
		require.ErrorIs(t, err, ErrBadKey, bad)
	}
	empty, err := ParseKeyring("", nil)
	require.NoError(t, err)
	require.False(t, empty.Enabled())
}

func FuzzOpen(f *testing.F) {
	k, _ := ParseKeyring(keyA, nil)
	f.Add(k.Seal("whsec_x"))
	f.Add("enc:v1:deadbeef:AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		// Any input opens or fails cleanly; what opens reseals and opens back the same.
		if pt, err := k.Open(s); err == nil {
			back, err := k.Open(k.Seal(pt))
			require.NoError(t, err)
			require.Equal(t, pt, back)
		}
	})
}
