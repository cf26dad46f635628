package client

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Message is one message to publish. Body is sent as JSON when ContentType is
// empty or a JSON type and Body is valid JSON, otherwise as base64 with
// ContentType (default application/octet-stream). Key orders messages (one key,
// one queue, in publish order); Tag is what subscriptions filter on; Headers are
// x-* headers passed to receivers. Delay (whole seconds, 1 s to one year) or
// DeliverAt (a past time means now) parks the message until then; a request's
// messages are all delayed or none is.
type Message struct {
	Body        []byte
	ContentType string
	Tag         string
	Key         string
	Headers     map[string]string
	Delay       time.Duration
	DeliverAt   time.Time
}

// JSON returns a Message whose body is v encoded as JSON.
func JSON(v any) (Message, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Message{}, fmt.Errorf("encode message body: %w", err)
	}
	return Message{Body: b, ContentType: "application/json"}, nil
}

// Published is one stored message: its id (msg_<queue>_<offset>), queue and
// offset; for a delayed message its id (dly_<n>, which CancelMessage takes) and
// DeliverAt (RFC 3339), its queue and offset being chosen when it is due.
type Published struct {
	ID        string `json:"id"`
	Queue     int64  `json:"queue"`
	Offset    int64  `json:"offset"`
	DeliverAt string `json:"deliver_at,omitempty"`
}

type wireMessage struct {
	Body        json.RawMessage   `json:"body,omitempty"`
	BodyBase64  *string           `json:"body_base64,omitempty"`
	ContentType string            `json:"content_type,omitempty"`
	Tag         string            `json:"tag,omitempty"`
	Key         string            `json:"key,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	// DelaySeconds and DeliverAt: see Message.
	DelaySeconds *int64  `json:"delay_seconds,omitempty"`
	DeliverAt    *string `json:"deliver_at,omitempty"`
}

func isJSONType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

func (m Message) wire() wireMessage {
	w := wireMessage{ContentType: m.ContentType, Tag: m.Tag, Key: m.Key, Headers: m.Headers}
	if m.Delay > 0 {
		secs := int64((m.Delay + time.Second - 1) / time.Second) // whole seconds, rounded up
		w.DelaySeconds = &secs
	}
	if !m.DeliverAt.IsZero() {
		at := m.DeliverAt.UTC().Format(time.RFC3339Nano)
		w.DeliverAt = &at
	}
	if isJSONType(m.ContentType) && json.Valid(m.Body) {
		w.Body = m.Body
		return w
	}
	s := base64.StdEncoding.EncodeToString(m.Body)
	w.BodyBase64 = &s
	return w
}

// PublishOption tunes one Publish call.
type PublishOption func(*publishCall)

type publishCall struct{ idemKey string }

// WithIdempotencyKey sets the request's Idempotency-Key (1 to 255 bytes) instead
// of a random one, e.g. an order id, so that a publish repeated by the caller
// within 24 h is stored once.
func WithIdempotencyKey(k string) PublishOption { return func(p *publishCall) { p.idemKey = k } }

// Publish stores msgs on topic, all or none, with the client's API key
// (POST /v1/topics/{topic}/messages) and returns their ids in order.
//
// Every call carries an Idempotency-Key (random unless WithIdempotencyKey), so a
// 429, a 5xx or a lost answer is retried safely: Herald answers a repeated key
// and body with the stored result, never a second copy. Retries follow
// WithRetries and a Retry-After; ctx bounds the whole call. Errors: *Error
// (ErrNotFound for an unknown topic, ErrForbidden, ErrInvalid, ErrUnavailable
// after the last retry) or ctx's error.
func (c *Client) Publish(ctx context.Context, topic string, msgs []Message, opts ...PublishOption) ([]Published, error) {
	var pc publishCall
	for _, o := range opts {
		o(&pc)
	}
	if pc.idemKey == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		pc.idemKey = "hc_" + hex.EncodeToString(b[:])
	}
	wire := make([]wireMessage, len(msgs))
	for i, m := range msgs {
		wire[i] = m.wire()
	}
	if err := checkText(map[string]any{"messages": wire}); err != nil {
		return nil, fmt.Errorf("encode publish: %w", err)
	}
	if !utf8.ValidString(pc.idemKey) {
		return nil, fmt.Errorf("encode publish: Idempotency-Key: %w", ErrInvalidUTF8)
	}
	payload, err := json.Marshal(map[string]any{"messages": wire})
	if err != nil {
		return nil, fmt.Errorf("encode publish: %w", err)
	}
	r := request{method: "POST", path: "/v1/topics/" + pathEscape(topic) + "/messages", bearer: c.apiKey,
		header: http.Header{"Idempotency-Key": {pc.idemKey}}}
	wait := c.backoff
	for attempt := 0; ; attempt++ {
		_, body, err := c.send(ctx, r, payload)
		if err == nil {
			var out struct {
				Messages []Published `json:"messages"`
			}
			if err := json.Unmarshal(body, &out); err != nil {
				return nil, fmt.Errorf("decode publish answer: %w", err)
			}
			return out.Messages, nil
		}
		var he *Error
		isHTTP := errors.As(err, &he)
		if attempt >= c.retries || ctx.Err() != nil || (isHTTP && !retryable(he.Status)) {
			return nil, err
		}
		d := wait
		if isHTTP && he.RetryAfter > 0 {
			d = min(he.RetryAfter, time.Minute)
		}
		if serr := c.sleep(ctx, d); serr != nil {
			return nil, fmt.Errorf("publish to %s: %w (last try: %v)", topic, serr, err)
		}
		wait = min(2*wait, 10*time.Second)
	}
}
