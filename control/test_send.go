package control

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/internal/webhook"
	"github.com/heraldhq/herald/models"
)

// testReadCapBytes is how much of a test send's 2xx answer is read for
// {"failed":[…]}: the worker's default (HERALD_WORKER_RESPONSE_CAP_BYTES, 64 KiB).
const testReadCapBytes = 64 << 10

// TestSendResult is the outcome of one test POST, judged as a delivery of that
// message would be (internal/webhook). OK means the endpoint accepted it: a 2xx
// whose {"failed":[…]} does not name it. Outcome is the delivery outcome (delivered,
// partial, throttled, gone, failed); StatusCode the HTTP status (0 when no response
// came); LatencyMS the time to the response headers in ms; RetryAfterMS the clamped
// wait a throttled answer asked for. ErrorClass is the class a delivery attempt
// records (internal/delivery.ErrorClass; empty for delivered, throttled and gone)
// and Error says what happened. ResponseExcerpt is at most 4 KiB of the response
// body, as text.
type TestSendResult struct {
	OK              bool   `json:"ok"`
	WebhookID       string `json:"webhook_id"`
	Outcome         string `json:"outcome"`
	StatusCode      int    `json:"status_code"`
	LatencyMS       int64  `json:"latency_ms"`
	RetryAfterMS    int64  `json:"retry_after_ms,omitempty"`
	ErrorClass      string `json:"error_class,omitempty"`
	Error           string `json:"error,omitempty"`
	ResponseExcerpt string `json:"response_excerpt"`
}

// TestSend POSTs a signed sample (or body, any JSON value) to group name's endpoint
// exactly as a delivery of one message at batch size 1 would go, through the
// worker's request builder, client and classifier (internal/webhook): the same
// headers (Standard Webhooks signed with every valid secret, Herald-Topic of the
// group's first subscription, Herald-Group, Herald-Attempt 1, traceparent,
// User-Agent, the endpoint's headers and credentials, a push token when push auth
// is on and a public URL set) plus Herald-Test: true, no redirects, the group's
// timeout, dialled through the SSRF guard. It never touches cursors or counters.
// Audited as group.test. Errors: models.ErrNotFound; a failed POST is a result, not
// an error.
func (c *Control) TestSend(ctx context.Context, a Actor, name string, body json.RawMessage) (*TestSendResult, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	idb := make([]byte, 8)
	_, _ = rand.Read(idb)
	id := "msg_test_" + hex.EncodeToString(idb)
	if len(body) == 0 {
		body, _ = json.Marshal(map[string]any{"type": "herald.test", "group": g.Name, "webhook_id": id, "sent_at": time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")})
	}
	p := &webhook.Post{URL: g.EndpointURL, Body: body, ContentType: "application/json", ID: id, Group: g.Name,
		Message: &webhook.Message{Attempt: 1}, Auth: g.EndpointAuth, Test: true}
	if len(g.Subscriptions) > 0 {
		p.Topic = g.Subscriptions[0].Topic
	}
	for _, secret := range g.SigningSecrets(time.Now()) {
		signer, err := signing.NewSigner(secret)
		if err != nil {
			return nil, err
		}
		p.Signers = append(p.Signers, signer)
	}
	if g.PushAuth != nil && c.issuer != "" {
		p.PushToken = func(ctx context.Context, id string, iat time.Time) (string, error) {
			return c.pushToken(ctx, g, id, iat)
		}
	}
	client := webhook.NewClient(c.guard)
	defer client.CloseIdleConnections()
	res, err := webhook.Send(ctx, client, p, time.Duration(g.TimeoutMS)*time.Millisecond, testReadCapBytes)
	if errors.Is(err, webhook.ErrEndpointURL) {
		return nil, &models.ValidationError{Errors: []models.FieldError{{Pointer: "/endpoint_url", Detail: err.Error()}}}
	}
	if err != nil {
		return nil, err
	}
	out := testResult(id, res)
	c.Record(ctx, a, "group.test", g.Name, nil, map[string]any{"ok": out.OK, "outcome": out.Outcome, "status_code": out.StatusCode,
		"latency_ms": out.LatencyMS, "error_class": out.ErrorClass})
	return out, nil
}

// testResult reads a test send's Result as a delivery of message id reads it: a
// partial answer that does not name id delivered it.
func testResult(id string, res webhook.Result) *TestSendResult {
	o := res.Outcome
	if o.Kind == webhook.KindPartial && !slices.Contains(o.Failed, id) {
		o = webhook.Outcome{Kind: webhook.KindDelivered, Status: o.Status}
	}
	out := &TestSendResult{OK: o.Kind == webhook.KindDelivered, WebhookID: id, Outcome: string(o.Kind), StatusCode: o.Status,
		LatencyMS: res.Latency.Milliseconds(), ErrorClass: string(o.Class), RetryAfterMS: o.RetryAfter.Milliseconds()}
	head := res.Head[:min(len(res.Head), webhook.ExcerptBytes)]
	out.ResponseExcerpt = strings.ToValidUTF8(string(head), "\uFFFD")
	status := fmt.Sprintf("%d %s", o.Status, http.StatusText(o.Status))
	switch {
	case res.Err != nil:
		out.Error = res.Err.Error()
	case o.Kind == webhook.KindThrottled:
		out.Error = fmt.Sprintf("%s: deliveries would pause for %s (Retry-After)", status, o.RetryAfter)
	case o.Kind == webhook.KindGone:
		out.Error = status + ": deliveries would pause the group"
	case o.Kind == webhook.KindPartial:
		out.Error = status + `: the answer's "failed" names this message`
	case o.Class == delivery.ClassPartialMalformed:
		out.Error = status + `: the answer's "failed" is not a list of message ids`
	case o.Class == delivery.ClassRedirect:
		out.Error = status + ": redirects are not followed"
	case o.Kind == webhook.KindFailed:
		out.Error = status
	}
	out.Error = strings.ToValidUTF8(out.Error, "\uFFFD")
	return out
}
