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
	"github.com/heraldhq/herald/internal/stagetrace"
	"github.com/heraldhq/herald/models"
)

// newClient returns the shared HTTP client: no proxy, no redirects followed, the SSRF
// guard on every dialled IP, and enough idle connections per host for a group's
// max_in_flight (no new connection per POST on the hot path).
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

// excerptBytes caps the response excerpt kept on a failed attempt.
const excerptBytes = 4 << 10

// post sends one batch and classifies the answer; for a failure it also returns the
// start of the response body. The timestamp and signature are made immediately
// before the POST. attempt gives each message's attempt number.
func (w *Worker) post(ctx context.Context, g *cachedGroup, topic string, attempt func(offset int64) int, msgs []models.Message) (Outcome, []byte) {
	var body []byte
	var id, contentType string
	if len(msgs) == 1 && g.BatchSize == 1 {
		m := msgs[0]
		body, contentType = m.Body, m.ContentType
	} else {
		body, contentType = envelope(topic, attempt, msgs), "application/json"
	}
	id = webhookID(g, msgs)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(g.TimeoutMS)*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.EndpointURL, bytes.NewReader(body))
	if err != nil {
		return Outcome{Kind: KindFailed, Class: ClassOther}, nil
	}
	h := req.Header
	// A group's static headers go first, so Herald's own below always win (validation
	// refuses reserved names anyway).
	for k, v := range g.EndpointAuth.Headers {
		h[http.CanonicalHeaderKey(k)] = []string{v}
	}
	if len(msgs) == 1 && g.BatchSize == 1 {
		m := msgs[0]
		for k, v := range m.Headers {
			if (strings.HasPrefix(k, "x-") && !deniedHeaders[k]) || models.IsOriginHeader(k) {
				h[http.CanonicalHeaderKey(k)] = []string{v}
			}
		}
		h["Herald-Tag"] = []string{m.Tag}
		h["Herald-Key"] = []string{m.Key}
		h["Herald-Attempt"] = []string{strconv.Itoa(attempt(m.Offset))}
	}
	h["Content-Type"] = []string{contentType}
	h["User-Agent"] = []string{"Herald-Webhooks/1"}
	h["Herald-Topic"] = []string{topic}
	h["Herald-Group"] = []string{g.Name}
	h["Traceparent"] = []string{traceparent(msgs[0].TraceID)}
	ts := time.Now().Unix()
	h["Webhook-Id"] = []string{id}
	h["Webhook-Timestamp"] = []string{strconv.FormatInt(ts, 10)}
	h["Webhook-Signature"] = []string{g.sign(id, ts, body)}
	if b := g.EndpointAuth.Basic; b != nil {
		req.SetBasicAuth(b.Username, b.Password)
	}
	if g.PushAuth != nil {
		tok, err := w.pushToken(ctx, g, id, time.Unix(ts, 0))
		if err != nil {
			w.log.Warn("make push token", "group", g.Name, "err", err)
			return Outcome{Kind: KindFailed, Class: ClassOther}, nil
		}
		h["Authorization"] = []string{"Bearer " + tok}
	}
	stagetrace.Mark(stagetrace.PostStart)
	resp, err := w.client.Do(req)
	stagetrace.Mark(stagetrace.PostDone)
	if err != nil {
		return Classify(0, "", nil, err), nil
	}
	defer resp.Body.Close()
	var head []byte
	if resp.StatusCode >= 200 && resp.StatusCode < 300 && resp.ContentLength != 0 {
		// Only a 2xx body can carry {"failed":[…]}; read it up to the cap.
		head, err = io.ReadAll(io.LimitReader(resp.Body, w.cfg.ResponseCapBytes))
	} else if resp.StatusCode >= 300 {
		head, err = io.ReadAll(io.LimitReader(resp.Body, excerptBytes))
		if err == nil {
			_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, w.cfg.ResponseCapBytes))
		}
	}
	out := Classify(resp.StatusCode, resp.Header.Get("Retry-After"), head, nil)
	if err != nil && out.Kind != KindDelivered {
		// A reset or timeout while reading the answer is the POST's failure class.
		out = Outcome{Kind: KindFailed, Status: resp.StatusCode, Class: classifyErr(err)}
	}
	switch out.Kind {
	case KindDelivered:
		return out, nil
	case KindPartial:
		// The answer that named the failed messages is their attempts' excerpt.
		return out, head[:min(len(head), excerptBytes)]
	}
	return out, head
}

// pushToken signs the push JWT of one POST (DESIGN §5): aud the group's audience,
// sub its name, jti the webhook-id, iat the webhook-timestamp.
func (w *Worker) pushToken(ctx context.Context, g *cachedGroup, id string, now time.Time) (string, error) {
	s, err := w.pushSigner(ctx)
	if err != nil {
		return "", err
	}
	return s.Sign(g.PushAudience(), g.Name, id, now)
}

// webhookID is a POST's webhook-id: the message id when it is sent alone at batch
// size 1, otherwise the batch id of its members.
func webhookID(g *cachedGroup, msgs []models.Message) string {
	if len(msgs) == 1 && g.BatchSize == 1 {
		return models.MessageID(msgs[0].QueueID, msgs[0].Offset)
	}
	return batchID(g.ID, msgs)
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

// cachedGroup is a group with its decoded signers: the current secret and, during a
// rotation's overlap window, the previous one.
type cachedGroup struct {
	*models.Group
	signers  []*signing.Signer
	loadedAt time.Time
}

// sign returns the webhook-signature header: one `v1,` signature per valid secret.
func (g *cachedGroup) sign(id string, ts int64, body []byte) string {
	out := ""
	for i, s := range g.signers {
		if i > 0 {
			out += " "
		}
		out += s.Sign(id, ts, body)
	}
	return out
}
