package signing

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSignVerifiedByOfficialLibrary checks our signatures against the official
// Standard Webhooks Go verifier.
func TestSignVerifiedByOfficialLibrary(t *testing.T) {
	t.Parallel()
	secret := NewSecret()
	s, err := NewSigner(secret)
	require.NoError(t, err)
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	body := []byte(`{"a":"<b>&amp;</b>"}`)
	ts := time.Now().Unix()
	h := http.Header{}
	h.Set("webhook-id", "msg_1_2")
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", s.Sign("msg_1_2", ts, body))
	require.NoError(t, wh.Verify(body, h))
	require.True(t, s.Verify("msg_1_2", ts, body, h.Get("webhook-signature")))
	require.False(t, s.Verify("msg_1_3", ts, body, h.Get("webhook-signature")))
	require.True(t, s.Verify("msg_1_2", ts, body, "v1,bogus "+h.Get("webhook-signature")), "one of several signatures")
}

func TestNewSignerRejectsBadSecrets(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "whsec_", "secret", "whsec_!!!", "whsec_c2hvcnQ="} {
		_, err := NewSigner(bad)
		require.ErrorIs(t, err, ErrBadSecret, bad)
	}
}

// FuzzSign checks that any id, timestamp and body verifies with the official library.
func FuzzSign(f *testing.F) {
	secret := NewSecret()
	s, _ := NewSigner(secret)
	wh, _ := standardwebhooks.NewWebhook(secret)
	f.Add("msg_1_1", []byte("{}"))
	f.Add("bat_abc", []byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		ts := time.Now().Unix()
		sig := s.Sign(id, ts, body)
		h := http.Header{}
		h["Webhook-Id"] = []string{id}
		h["Webhook-Timestamp"] = []string{strconv.FormatInt(ts, 10)}
		h["Webhook-Signature"] = []string{sig}
		if err := wh.Verify(body, h); err != nil && id != "" {
			t.Fatalf("official verifier rejects id %q: %v", id, err)
		}
	})
}
