package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// RotateGroupSecret gives a group a new signing secret and returns the group with
// it (SigningSecret). The previous secret keeps signing beside the new one for
// overlap (whole seconds; 0 takes the server's default, 24 h), until
// PreviousSecretExpiresAt. Needs role operator. Errors: ErrNotFound, ErrInvalid.
func (c *Client) RotateGroupSecret(ctx context.Context, group string, overlap time.Duration) (*Group, error) {
	var body any
	if overlap > 0 {
		body = map[string]int{"overlap_seconds": int(overlap / time.Second)}
	}
	var g Group
	return &g, c.do(ctx, request{method: "POST", path: groupPath(group, "secret", "rotate"), body: body}, &g)
}

// TestResult is a test delivery's outcome: OK for a 2xx, the webhook-id sent
// (msg_test_…), Outcome (the worker's classification), StatusCode (0 when no answer
// came), LatencyMS (ms), and for a failure ErrorClass and Error. ResponseExcerpt is
// at most 4 KiB of the answer's body.
type TestResult struct {
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

// TestGroup POSTs a signed sample to the group's endpoint as a delivery of one
// message would go (body: any JSON value, nil for Herald's sample) and returns
// what the endpoint answered; a failed POST is a result, not an error. Needs role
// operator. Errors: ErrNotFound, ErrInvalid (body not JSON).
func (c *Client) TestGroup(ctx context.Context, group string, body json.RawMessage) (*TestResult, error) {
	var b any
	if body != nil {
		b = map[string]json.RawMessage{"body": body}
	}
	var r TestResult
	return &r, c.do(ctx, request{method: "POST", path: groupPath(group, "test"), body: b}, &r)
}

// ResendResult counts a resend: Queued messages went to the group's retry topic,
// Skipped were already waiting there.
type ResendResult struct {
	Queued  int `json:"queued"`
	Skipped int `json:"skipped"`
}

// ResendMessage sends message id (msg_<queue>_<offset>), already delivered to the
// group, again through its retry topic, at the group's rate. Needs role operator.
// Errors: ErrNotFound (group, message, or a topic the group does not subscribe
// to), ErrInvalid (the group's filters exclude it, or it is not delivered yet).
func (c *Client) ResendMessage(ctx context.Context, group, id string) (*ResendResult, error) {
	var r ResendResult
	return &r, c.do(ctx, request{method: "POST", path: groupPath(group, "messages", url.PathEscape(id), "resend")}, &r)
}

// ResendRange selects messages to send again: those of Queue from FromOffset to
// ToOffset (inclusive), or, with FromTime/ToTime set, those published in
// [FromTime, ToTime).
type ResendRange struct {
	Queue      int64      `json:"queue,omitempty"`
	FromOffset int64      `json:"from_offset,omitempty"`
	ToOffset   int64      `json:"to_offset,omitempty"`
	FromTime   *time.Time `json:"from_time,omitempty"`
	ToTime     *time.Time `json:"to_time,omitempty"`
}

// ResendMessages sends a range of already delivered messages to the group again
// through its retry topic. Needs role operator. Errors: ErrNotFound, ErrInvalid
// (an empty or too large range).
func (c *Client) ResendMessages(ctx context.Context, group string, r ResendRange) (*ResendResult, error) {
	var out ResendResult
	return &out, c.do(ctx, request{method: "POST", path: groupPath(group, "resend"), body: r}, &out)
}

// SkipBlockedQueue drops the failed head messages of a blocked queue of a group
// ordered by queue (they become dead letters) so the queue goes on; the owning
// dispatcher applies it within a heartbeat. Needs role operator. Errors:
// ErrNotFound (group, or the queue is not blocked), ErrForbidden.
func (c *Client) SkipBlockedQueue(ctx context.Context, group string, queue int64) (*BlockedQueue, error) {
	return c.queueAction(ctx, group, queue, "skip")
}

// ResumeBlockedQueue sends the messages a blocked queue waits on again now, with a
// fresh count of attempts (also after a pause on exhausted attempts). Errors as
// SkipBlockedQueue.
func (c *Client) ResumeBlockedQueue(ctx context.Context, group string, queue int64) (*BlockedQueue, error) {
	return c.queueAction(ctx, group, queue, "resume")
}

func (c *Client) queueAction(ctx context.Context, group string, queue int64, action string) (*BlockedQueue, error) {
	var b BlockedQueue
	return &b, c.do(ctx, request{method: "POST", path: groupPath(group, "queues", strconv.FormatInt(queue, 10), action)}, &b)
}
