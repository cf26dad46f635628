package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
)

// MessageSummary is a stored message without its body, as a topic's browse lists
// it: ID (msg_<queue>_<offset>), Tag, Key, ContentType, BodyBytes (its size in
// bytes) and PublishedAt (RFC 3339).
type MessageSummary struct {
	ID          string `json:"id"`
	Queue       int64  `json:"queue"`
	Offset      int64  `json:"offset"`
	Tag         string `json:"tag"`
	Key         string `json:"key"`
	ContentType string `json:"content_type"`
	BodyBytes   int64  `json:"body_bytes"`
	PublishedAt string `json:"published_at"`
}

// Attempt is one recorded POST of a message: Status (0 when no answer came),
// ErrorClass for a failure, LatencyMS (ms), the start of a failed answer's body and
// At (RFC 3339). WebhookID is the message's id, or the batch's (bat_…) when it went
// in a batch.
type Attempt struct {
	WebhookID       string `json:"webhook_id"`
	Attempt         int    `json:"attempt"`
	Status          int    `json:"status"`
	ErrorClass      string `json:"error_class"`
	LatencyMS       int    `json:"latency_ms"`
	ResponseExcerpt string `json:"response_excerpt"`
	At              string `json:"at"`
}

// MessageAttempt is one delivery attempt of a message, naming its group.
type MessageAttempt struct {
	Group string `json:"group"`
	Attempt
}

// MessageDetail is one message with its body and every recorded delivery attempt
// of it, for every group, oldest first. Body holds a JSON body as published;
// BodyBase64 (nil for a JSON body) holds any other body, base64-encoded.
type MessageDetail struct {
	MessageSummary
	Topic            string            `json:"topic"`
	Headers          map[string]string `json:"headers"`
	TraceID          string            `json:"trace_id"`
	Body             json.RawMessage   `json:"body,omitempty"`
	BodyBase64       *string           `json:"body_base64,omitempty"`
	DeliveryAttempts []MessageAttempt  `json:"delivery_attempts"`
	// State is "waiting" and DeliverAt its due time for a delayed message (dly_…)
	// not yet due; both are empty for a message in its queue.
	State     string `json:"state,omitempty"`
	DeliverAt string `json:"deliver_at,omitempty"`
}

// BatchDetail is one batch POST (id bat_…): the group that sent it, its member
// message ids in (queue, offset) order and every attempt recorded for it, one per
// member and POST, oldest first.
type BatchDetail struct {
	ID               string         `json:"id"`
	Group            string         `json:"group"`
	Messages         []string       `json:"messages"`
	DeliveryAttempts []BatchAttempt `json:"delivery_attempts"`
}

// BatchAttempt is one member message's attempt within a batch POST.
type BatchAttempt struct {
	Message string `json:"message"`
	Attempt
}

// MessageQuery filters a topic's browse: one message Key, one Tag, and a publish
// time range [From, To) in RFC 3339; empty fields do not filter.
type MessageQuery struct {
	Key, Tag, From, To string
}

// ListMessages returns one page of topic's stored messages, without bodies
// (GET /api/v1/topics/{topic}/messages). Errors: ErrNotFound, ErrInvalid (a filter).
func (c *Client) ListMessages(ctx context.Context, topic string, q MessageQuery, o ListOptions) (*Page[MessageSummary], error) {
	v := o.query()
	for k, s := range map[string]string{"key": q.Key, "tag": q.Tag, "from": q.From, "to": q.To} {
		if s != "" {
			v.Set(k, s)
		}
	}
	var p Page[MessageSummary]
	return &p, c.do(ctx, request{method: "GET", path: "/api/v1/topics/" + pathEscape(topic) + "/messages", query: v}, &p)
}

// IsBatchID reports whether id names a batch POST (bat_…) rather than a message.
func IsBatchID(id string) bool { return strings.HasPrefix(id, "bat_") }

// GetMessage returns message id (msg_<queue>_<offset>) with its body and delivery
// attempts (GET /api/v1/messages/{id}). Errors: ErrNotFound (no such message, or
// a batch id: use GetBatch).
func (c *Client) GetMessage(ctx context.Context, id string) (*MessageDetail, error) {
	if IsBatchID(id) {
		return nil, &Error{Status: 404, Kind: "not-found", Detail: id + " is a batch id: use GetBatch"}
	}
	var m MessageDetail
	return &m, c.do(ctx, request{method: "GET", path: "/api/v1/messages/" + url.PathEscape(id)}, &m)
}

// CancelMessage cancels delayed message id (dly_…, from Publish) before its time,
// so it is never delivered (DELETE /api/v1/messages/{id}; operator or admin).
// Errors: ErrNotFound once it was moved into its topic at its time or cancelled,
// ErrInvalid for a message already in its queue (msg_…).
func (c *Client) CancelMessage(ctx context.Context, id string) error {
	return c.do(ctx, request{method: "DELETE", path: "/api/v1/messages/" + url.PathEscape(id)}, nil)
}

// GetBatch returns batch POST id (bat_…, a batch's webhook-id) with its members and
// attempts (GET /api/v1/messages/{id}). Errors: ErrNotFound (never sent, past the
// attempt log's retention, or not a batch id), ErrInvalid (a malformed bat_ id).
func (c *Client) GetBatch(ctx context.Context, id string) (*BatchDetail, error) {
	if !IsBatchID(id) {
		return nil, &Error{Status: 404, Kind: "not-found", Detail: id + " is not a batch id (bat_…): use GetMessage"}
	}
	var b BatchDetail
	return &b, c.do(ctx, request{method: "GET", path: "/api/v1/messages/" + url.PathEscape(id)}, &b)
}
