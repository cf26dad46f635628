package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
)

// newClient returns the shared HTTP client: no proxy, no redirects followed, the SSRF
// guard on every dialled IP, and enough idle connections per host for a group's
// max_in_flight (DESIGN §2 hot path).
func newClient(guard ssrf.Guard) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: guard.Control}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   models.MaxMaxInFlight,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// deniedHeaders are publisher headers never forwarded even though they start with x-.
var deniedHeaders = map[string]bool{"x-forwarded-for": true, "x-forwarded-host": true, "x-forwarded-proto": true, "x-real-ip": true}

// post sends one batch and classifies the answer. The timestamp and signature are
// made immediately before the POST.
func (w *Worker) post(ctx context.Context, g *cachedGroup, topic string, attempt int, msgs []models.Message) Outcome {
	var body []byte
	var id, contentType string
	if len(msgs) == 1 && g.BatchSize == 1 {
		m := msgs[0]
		body, id, contentType = m.Body, models.MessageID(m.QueueID, m.Offset), m.ContentType
	} else {
		body, id, contentType = envelope(topic, attempt, msgs), batchID(g.ID, msgs), "application/json"
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(g.TimeoutMS)*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.EndpointURL, bytes.NewReader(body))
	if err != nil {
		return Outcome{Kind: KindFailed, Class: ClassOther}
	}
	h := req.Header
	if len(msgs) == 1 && g.BatchSize == 1 {
		m := msgs[0]
		for k, v := range m.Headers {
			if strings.HasPrefix(k, "x-") && !deniedHeaders[k] {
				h[http.CanonicalHeaderKey(k)] = []string{v}
			}
		}
		h["Herald-Tag"] = []string{m.Tag}
		h["Herald-Key"] = []string{m.Key}
		h["Herald-Attempt"] = []string{strconv.Itoa(attempt)}
	}
	h["Content-Type"] = []string{contentType}
	h["User-Agent"] = []string{"Herald-Webhooks/1"}
	h["Herald-Topic"] = []string{topic}
	h["Herald-Group"] = []string{g.Name}
	h["Traceparent"] = []string{traceparent(msgs[0].TraceID)}
	ts := time.Now().Unix()
	h["Webhook-Id"] = []string{id}
	h["Webhook-Timestamp"] = []string{strconv.FormatInt(ts, 10)}
	h["Webhook-Signature"] = []string{g.signer.Sign(id, ts, body)}
	resp, err := w.client.Do(req)
	if err != nil {
		return Classify(0, err)
	}
	_, rerr := io.Copy(io.Discard, io.LimitReader(resp.Body, w.cfg.ResponseCapBytes))
	resp.Body.Close()
	out := Classify(resp.StatusCode, nil)
	if rerr != nil && out.Kind == KindDelivered {
		// The endpoint answered 2xx; a broken body afterwards does not undo delivery.
		return out
	}
	return out
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

// cachedGroup is a group with its decoded signer.
type cachedGroup struct {
	*models.Group
	signer   *signing.Signer
	loadedAt time.Time
}
