package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Delivered is one message as a receiver gets it, from a batch envelope entry or,
// at batch size 1, from the body and herald-* headers. ID (msg_<queue>_<offset>)
// stays the same through retries and redrives: de-duplicate on it. Body is the
// published body (decoded from body_base64 when the envelope carried it so).
type Delivered struct {
	ID          string
	Topic       string
	Queue       int64
	Offset      int64
	Tag         string
	Key         string
	Headers     map[string]string
	PublishedAt time.Time
	Attempt     int
	ContentType string
	Body        []byte
}

type envelopeEntry struct {
	ID          string            `json:"id"`
	Topic       string            `json:"topic"`
	Queue       int64             `json:"queue"`
	Offset      int64             `json:"offset"`
	Tag         string            `json:"tag"`
	Key         string            `json:"key"`
	Headers     map[string]string `json:"headers"`
	PublishedAt time.Time         `json:"published_at"`
	Attempt     int               `json:"attempt"`
	ContentType string            `json:"content_type"`
	Body        json.RawMessage   `json:"body"`
	BodyBase64  *string           `json:"body_base64"`
}

// ErrEnvelope: a batch delivery's body is not a {"messages":[…]} envelope.
var ErrEnvelope = errors.New("not a batch envelope")

// ParseDelivery returns the messages of one verified delivery: the entries of a
// batch envelope when the webhook-id is a batch id (bat_…), else the single
// message the body is. Errors wrap ErrEnvelope.
func ParseDelivery(h http.Header, body []byte) ([]Delivered, error) {
	id := h.Get("webhook-id")
	if strings.HasPrefix(id, "bat_") {
		return ParseBatch(body)
	}
	d := Delivered{ID: id, Topic: h.Get("herald-topic"), Tag: h.Get("herald-tag"), Key: h.Get("herald-key"),
		ContentType: h.Get("Content-Type"), Body: body, Headers: map[string]string{}}
	d.Attempt, _ = strconv.Atoi(h.Get("herald-attempt"))
	if q, o, ok := strings.Cut(strings.TrimPrefix(id, "msg_"), "_"); ok {
		d.Queue, _ = strconv.ParseInt(q, 10, 64)
		d.Offset, _ = strconv.ParseInt(o, 10, 64)
	}
	for name := range h {
		if l := strings.ToLower(name); strings.HasPrefix(l, "x-") {
			d.Headers[l] = h.Get(name)
		}
	}
	return []Delivered{d}, nil
}

// ParseBatch decodes a batch envelope {"messages":[…]} (README, delivery contract).
func ParseBatch(body []byte) ([]Delivered, error) {
	var env struct {
		Messages *[]envelopeEntry `json:"messages"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEnvelope, err)
	}
	if env.Messages == nil {
		return nil, fmt.Errorf("%w: no messages field", ErrEnvelope)
	}
	out := make([]Delivered, 0, len(*env.Messages))
	for i, e := range *env.Messages {
		d := Delivered{ID: e.ID, Topic: e.Topic, Queue: e.Queue, Offset: e.Offset, Tag: e.Tag, Key: e.Key,
			Headers: e.Headers, PublishedAt: e.PublishedAt, Attempt: e.Attempt, ContentType: e.ContentType, Body: e.Body}
		if e.BodyBase64 != nil {
			b, err := base64.StdEncoding.DecodeString(*e.BodyBase64)
			if err != nil {
				return nil, fmt.Errorf("%w: messages[%d].body_base64: %v", ErrEnvelope, i, err)
			}
			d.Body = b
		}
		out = append(out, d)
	}
	return out, nil
}

// PartialFailure is the answer body that tells Herald only the listed messages
// failed ({"failed":[ids]}, sent with a 2xx status): they are retried, the
// others count as delivered.
func PartialFailure(ids ...string) []byte {
	if ids == nil {
		ids = []string{}
	}
	b, _ := json.Marshal(map[string][]string{"failed": ids})
	return b
}

// MaxDeliveryBytes bounds the body Handler reads: 64 MiB, above any batch Herald sends.
const MaxDeliveryBytes = 64 << 20

// HandleFunc processes one delivery's messages and returns the ids of those that
// failed (to be retried; nil when all succeeded). A non-nil error fails the
// whole delivery: every message is retried.
type HandleFunc func(ctx context.Context, msgs []Delivered) (failed []string, err error)

// Handler is a net/http receiver: it verifies the signature (401 when it does
// not match, 400 for an unreadable envelope), calls fn, and answers 204, 200
// with {"failed":[…]}, or 500 when fn returns an error.
func Handler(v *Verifier, fn HandleFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxDeliveryBytes))
		if err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		if err := v.Verify(r.Header, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		msgs, err := ParseDelivery(r.Header, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		failed, err := fn(r.Context(), msgs)
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		case len(failed) > 0:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(PartialFailure(failed...))
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
}
