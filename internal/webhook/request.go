// Package webhook builds, sends and classifies one webhook POST. It is the only
// place a webhook request is made: deliveries (worker) and the test send
// (control.TestSend) both use Post, NewClient and Send, so a test send goes out with
// the headers, signature, client settings and error classes of a delivery.
package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/models"
)

// UserAgent is the User-Agent of every webhook POST.
const UserAgent = "Herald-Webhooks/1"

// ErrEndpointURL wraps the error of an endpoint URL no request can be made for.
var ErrEndpointURL = errors.New("endpoint url")

// deniedHeaders are publisher headers never forwarded even though they start with x-.
var deniedHeaders = map[string]bool{"x-forwarded-for": true, "x-forwarded-host": true, "x-forwarded-proto": true, "x-real-ip": true}

// Message is the lone message of a POST at batch size 1: its tag, key, attempt
// number and publisher headers travel as headers (Herald-Tag, Herald-Key,
// Herald-Attempt; x- headers but the forwarding ones, and dead-letter origin
// headers). A batch envelope carries them in its body instead.
type Message struct {
	Tag     string
	Key     string
	Attempt int
	Headers map[string]string
}

// Post is one webhook POST to a group's endpoint. ID is the webhook-id; Group and
// Topic name the Herald-Group and Herald-Topic; TraceID is the publisher's W3C trace
// id (32 hex characters), continued in traceparent, else a new trace is started.
// Message is set for a lone message at batch size 1. Auth's static headers go first
// and Basic credentials in Authorization; Signers sign webhook-signature (one `v1,`
// signature each, Standard Webhooks); PushToken, when set, makes the push JWT
// (DESIGN §5) for the webhook-id and timestamp sent as a bearer Authorization. Test
// adds Herald-Test: true.
type Post struct {
	URL         string
	Body        []byte
	ContentType string
	ID          string
	Group       string
	Topic       string
	TraceID     string
	Message     *Message
	Auth        models.EndpointAuth
	Signers     []*signing.Signer
	PushToken   func(ctx context.Context, id string, iat time.Time) (string, error)
	Test        bool
}

// Request builds p's request, signed now: webhook-timestamp is now in Unix seconds,
// so call it immediately before sending. Errors wrap ErrEndpointURL for a URL no
// request can be made for, or come from PushToken.
func (p *Post) Request(ctx context.Context, now time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(p.Body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEndpointURL, err)
	}
	h := req.Header
	// A group's static headers go first, so Herald's own below always win (validation
	// refuses reserved names anyway).
	for k, v := range p.Auth.Headers {
		h[http.CanonicalHeaderKey(k)] = []string{v}
	}
	if m := p.Message; m != nil {
		for k, v := range m.Headers {
			if (strings.HasPrefix(k, "x-") && !deniedHeaders[k]) || models.IsHeraldHeader(k) {
				h[http.CanonicalHeaderKey(k)] = []string{v}
			}
		}
		h["Herald-Tag"] = []string{m.Tag}
		h["Herald-Key"] = []string{m.Key}
		h["Herald-Attempt"] = []string{strconv.Itoa(m.Attempt)}
	}
	h["Content-Type"] = []string{p.ContentType}
	h["User-Agent"] = []string{UserAgent}
	h["Herald-Topic"] = []string{p.Topic}
	h["Herald-Group"] = []string{p.Group}
	h["Traceparent"] = []string{traceparent(p.TraceID)}
	if p.Test {
		h["Herald-Test"] = []string{"true"}
	}
	ts := now.Unix()
	h["Webhook-Id"] = []string{p.ID}
	h["Webhook-Timestamp"] = []string{strconv.FormatInt(ts, 10)}
	h["Webhook-Signature"] = []string{sign(p.Signers, p.ID, ts, p.Body)}
	if b := p.Auth.Basic; b != nil {
		req.SetBasicAuth(b.Username, b.Password)
	}
	if p.PushToken != nil {
		tok, err := p.PushToken(ctx, p.ID, time.Unix(ts, 0))
		if err != nil {
			return nil, fmt.Errorf("make push token: %w", err)
		}
		h["Authorization"] = []string{"Bearer " + tok}
	}
	return req, nil
}

// sign returns the webhook-signature header: one `v1,` signature per signer, space separated.
func sign(signers []*signing.Signer, id string, ts int64, body []byte) string {
	var b strings.Builder
	for i, s := range signers {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.Sign(id, ts, body))
	}
	return b.String()
}

// traceparent continues the publisher's W3C trace when one was given (32 hex
// characters) and otherwise starts a new one.
func traceparent(traceID string) string {
	var span [8]byte
	_, _ = rand.Read(span[:])
	if len(traceID) != 32 {
		var t [16]byte
		_, _ = rand.Read(t[:])
		traceID = hex.EncodeToString(t[:])
	}
	return "00-" + traceID + "-" + hex.EncodeToString(span[:]) + "-01"
}
