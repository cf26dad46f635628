package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a delivery's webhook-timestamp may be from the
// receiver's clock, either way, before Verify rejects it (Standard Webhooks' 5 min).
const DefaultTolerance = 5 * time.Minute

// Verification errors; Verify wraps them with detail.
var (
	// ErrMissingHeaders: webhook-id, webhook-timestamp or webhook-signature is absent.
	ErrMissingHeaders = errors.New("missing webhook headers")
	// ErrTimestamp: the timestamp is unreadable or outside the tolerance (a replay or a skewed clock).
	ErrTimestamp = errors.New("webhook timestamp out of tolerance")
	// ErrSignature: no v1 signature matches any of the verifier's secrets.
	ErrSignature = errors.New("no matching webhook signature")
)

// Verifier checks Standard Webhooks signatures of deliveries. It holds one or more
// group secrets (whsec_…: the current one and, during a rotation, the previous
// one). Tolerance defaults to DefaultTolerance; Now (default time.Now) is the
// receiver's clock. Safe for concurrent use once built.
type Verifier struct {
	keys      [][]byte
	Tolerance time.Duration
	Now       func() time.Time
}

// NewVerifier returns a Verifier for secrets (whsec_ + base64, as a group's
// signing_secret). Errors: a secret that is not of that form.
func NewVerifier(secrets ...string) (*Verifier, error) {
	if len(secrets) == 0 {
		return nil, errors.New("new verifier: no secret given")
	}
	v := &Verifier{Tolerance: DefaultTolerance, Now: time.Now}
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil || len(key) == 0 {
			return nil, fmt.Errorf("new verifier: secret is not whsec_ + base64")
		}
		v.keys = append(v.keys, key)
	}
	return v, nil
}

// Verify checks the webhook-id, webhook-timestamp and webhook-signature headers
// against body (the exact bytes received). Errors wrap ErrMissingHeaders,
// ErrTimestamp or ErrSignature.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	return v.VerifyValues(h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature"), body)
}

// VerifyValues is Verify for header values taken elsewhere (e.g. a serverless
// event's header map).
func (v *Verifier) VerifyValues(id, timestamp, signature string, body []byte) error {
	if id == "" || timestamp == "" || signature == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not Unix seconds", ErrTimestamp, timestamp)
	}
	now := v.Now()
	if d := now.Sub(time.Unix(ts, 0)); d > v.Tolerance || d < -v.Tolerance {
		return fmt.Errorf("%w: %s off the receiver's clock", ErrTimestamp, d.Round(time.Second))
	}
	for _, key := range v.keys {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + timestamp + "."))
		mac.Write(body)
		want := mac.Sum(nil)
		for _, sig := range strings.Fields(signature) {
			raw, ok := strings.CutPrefix(sig, "v1,")
			if !ok {
				continue
			}
			got, err := base64.StdEncoding.DecodeString(raw)
			if err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrSignature
}
