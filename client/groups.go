package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
)

// Subscription binds a group to a topic; empty Tags means every tag. Filter is an
// attribute filter on the publisher's x-* headers, modelled on Google Pub/Sub's
// subscription filters (e.g. `attributes.x-region = "eu" AND NOT
// attributes:x-test`); "" means every message. A message is delivered when it
// passes both Tags and Filter.
type Subscription struct {
	Topic  string   `json:"topic"`
	Tags   []string `json:"tags"`
	Filter string   `json:"filter"`
}

// MaskedValue is what reads show in place of a write-only value (an endpoint
// header's value, a basic-auth password). Sending it back in a create or patch
// keeps the stored value, so a Group read may be sent back as it is.
const MaskedValue = "********"

// PushAuth turns push tokens on: each POST carries `Authorization: Bearer <JWT>`
// (EdDSA, verifiable against the api's /.well-known/jwks.json) whose `aud` claim
// is Audience, or the endpoint URL when Audience is empty. Cannot be combined with
// BasicAuth.
type PushAuth struct {
	Audience string `json:"audience"`
}

// BasicAuth is an endpoint's HTTP basic credentials (RFC 7617), sent on every
// POST. Password is write-only: reads show MaskedValue.
type BasicAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// GroupSettings are every writable setting of a group, as GET shows them (units
// in the names: ms, bytes, hours; RateLimit in messages per second, 0 =
// unlimited; RetrySchedule in seconds). Ordering is key (one POST at a time per
// message key, the default for an ordered group) or queue, and "" when not
// Ordered; OrderedOnExhausted is dead_letter or pause; ConsumeFrom earliest,
// latest or an RFC 3339 time. PushAuth and BasicAuth are nil when off;
// EndpointHeaders' values and BasicAuth's password read MaskedValue. In a GroupSpec a zero value takes the server's default.
type GroupSettings struct {
	EndpointURL              string         `json:"endpoint_url"`
	Subscriptions            []Subscription `json:"subscriptions"`
	BatchSize                int            `json:"batch_size"`
	BatchMaxBytes            int            `json:"batch_max_bytes"`
	BatchWindowMS            int            `json:"batch_window_ms"`
	MaxInFlight              int            `json:"max_in_flight"`
	RateLimit                int            `json:"rate_limit"`
	TimeoutMS                int            `json:"timeout_ms"`
	MaxAttempts              int            `json:"max_attempts"`
	RetrySchedule            []int          `json:"retry_schedule"`
	Ordered                  bool           `json:"ordered"`
	Ordering                 string         `json:"ordering"`
	OrderedOnExhausted       string         `json:"ordered_on_exhausted"`
	ConsumeFrom              string         `json:"consume_from"`
	DeadLetterRetentionHours int            `json:"dead_letter_retention_hours"`
	// MaxThrottles is how many throttles in a row (429, or 503 with Retry-After)
	// make a message's failed attempt (1 to 1,000; the server's default is 10).
	MaxThrottles    int               `json:"max_throttles"`
	PushAuth        *PushAuth         `json:"push_auth"`
	EndpointHeaders map[string]string `json:"endpoint_headers"`
	BasicAuth       *BasicAuth        `json:"basic_auth"`
}

// GroupSpec is a new consumer group: a name and its settings. Settings left at
// their zero value (0, "", false, nil, empty) are not sent, so the server gives
// them its defaults.
type GroupSpec struct {
	Name string `json:"name"`
	GroupSettings
}

// requiredGroupFields are sent by a GroupSpec even when empty.
var requiredGroupFields = map[string]bool{"name": true, "endpoint_url": true, "subscriptions": true}

// MarshalJSON encodes s without its zero-valued settings.
func (s GroupSpec) MarshalJSON() ([]byte, error) {
	type plain GroupSpec
	b, err := json.Marshal(plain(s))
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range m {
		if requiredGroupFields[k] {
			continue
		}
		switch string(v) {
		case "0", `""`, "false", "null", "[]", "{}":
			delete(m, k)
		}
	}
	return json.Marshal(m)
}

// Group is a consumer group as the admin API shows it. SigningSecret (whsec_…)
// is only filled by CreateGroup, GroupSecret and secret rotation ("" from
// GetGroup, PatchGroup and the others). Unreadable, set only for a group whose
// stored secrets or endpoint auth cannot be read back, says why (nothing is
// delivered for it);
// PreviousSecretExpiresAt ends the overlap of the last secret rotation (nil when
// none is open).
type Group struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	GroupSettings
	SigningSecret           string  `json:"signing_secret"`
	Status                  string  `json:"status"`
	PausedReason            string  `json:"paused_reason"`
	Unreadable              string  `json:"unreadable,omitempty"`
	PreviousSecretExpiresAt *string `json:"previous_secret_expires_at"`
	ConfigVersion           int64   `json:"config_version"`
	CreatedAt               string  `json:"created_at"`
	UpdatedAt               string  `json:"updated_at"`
	// DroppedEndpointAuth, on the answer to a patch that moved endpoint_url to
	// another host, names the stored endpoint auth it dropped (header names and
	// "basic_auth"; the server's Herald-Dropped-Endpoint-Auth). Not part of the JSON.
	DroppedEndpointAuth []string `json:"-"`
}

// GroupStats is a group's live state: lag, effective rate, breaker, retries and
// pending dead letters. Times are RFC 3339 (nil when unset); BlockedQueues lists,
// for a group ordered by queue, each queue stopped on a failed head; BlockedKeys,
// for a group ordered by key, the keys stopped on a failed POST (the server lists
// a bounded number of them; BlockedKeyCount counts them all).
type GroupStats struct {
	Group               string         `json:"group"`
	Status              string         `json:"status"`
	PausedReason        string         `json:"paused_reason"`
	LagMessages         int64          `json:"lag_messages"`
	LagSeconds          float64        `json:"lag_seconds"`
	RateLimit           int            `json:"rate_limit"`
	EffectiveRate       float64        `json:"effective_rate"`
	ConsecutiveFailures int            `json:"consecutive_failures"`
	SuccessesMinute     int            `json:"successes_last_minute"`
	FailuresMinute      int            `json:"failures_last_minute"`
	LastStatus          int            `json:"last_status"`
	LastError           string         `json:"last_error"`
	LastSuccessAt       *string        `json:"last_success_at"`
	FailingSince        *string        `json:"failing_since"`
	ThrottledUntil      *string        `json:"throttled_until"`
	Breaker             string         `json:"breaker"`
	BreakerOpenUntil    *string        `json:"breaker_open_until"`
	RetryMessages       int64          `json:"retry_messages"`
	DeadLetters         int64          `json:"dead_letters_pending"`
	BlockedQueues       []BlockedQueue `json:"blocked_queues"`
	BlockedKeys         []BlockedKey   `json:"blocked_keys"`
	BlockedKeyCount     int            `json:"blocked_key_count"`
}

// BlockedKey is one message key of a group ordered by key stopped on a failed
// POST in one queue: Count of its messages from Offset (MessageID) failed
// Attempts times; they are sent again at NextAttemptAt (RFC 3339, nil when
// Paused) or when an operator resumes or skips the key. Later messages of the
// key wait; other keys do not. Action is the operator action pending on it
// (skip or resume), "" when none.
type BlockedKey struct {
	Queue         int64   `json:"queue"`
	Key           string  `json:"key"`
	MessageID     string  `json:"message_id"`
	Offset        int64   `json:"offset"`
	Count         int     `json:"count"`
	Attempts      int     `json:"attempts"`
	NextAttemptAt *string `json:"next_attempt_at"`
	Paused        bool    `json:"paused"`
	LastError     string  `json:"last_error"`
	Action        string  `json:"pending_action,omitempty"`
}

// BlockedQueue is one queue of an ordered group stopped on a failed head message:
// Count messages from Offset, tried Attempts times, retried at NextAttemptAt (nil
// when Paused), and the operator action pending on it, if any.
type BlockedQueue struct {
	Queue         int64   `json:"queue"`
	MessageID     string  `json:"message_id"`
	Offset        int64   `json:"offset"`
	Count         int     `json:"count"`
	Attempts      int     `json:"attempts"`
	NextAttemptAt *string `json:"next_attempt_at"`
	Paused        bool    `json:"paused"`
	LastError     string  `json:"last_error"`
	Action        string  `json:"pending_action,omitempty"`
}

// Cursor is a group's position in one queue.
type Cursor struct {
	Queue      int64   `json:"queue"`
	Topic      string  `json:"topic"`
	Offset     int64   `json:"offset"`
	MaxOffset  int64   `json:"max_offset"`
	Lag        int64   `json:"lag"`
	LagSeconds float64 `json:"lag_seconds"`
	OpenHoles  int     `json:"open_holes"`
	Version    int64   `json:"version"`
	Owner      string  `json:"owner"`
}

// OffsetReset moves a group's cursors: To is earliest, latest or timestamp (then
// Timestamp is RFC 3339); Queues limits it to those queue ids (empty: all).
type OffsetReset struct {
	To        string  `json:"to"`
	Timestamp string  `json:"timestamp,omitempty"`
	Queues    []int64 `json:"queues,omitempty"`
}

func groupPath(name string, rest ...string) string {
	p := "/api/v1/groups/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// CreateGroup creates a consumer group; the answer carries its signing secret.
// Errors: ErrConflict, ErrInvalid (including blocked endpoint addresses).
func (c *Client) CreateGroup(ctx context.Context, spec GroupSpec) (*Group, error) {
	if spec.Subscriptions == nil {
		spec.Subscriptions = []Subscription{}
	}
	var g Group
	return &g, c.do(ctx, request{method: "POST", path: "/api/v1/groups", body: spec}, &g)
}

// ListGroups returns one page of groups, by name.
func (c *Client) ListGroups(ctx context.Context, o ListOptions) (*Page[Group], error) {
	var p Page[Group]
	return &p, c.do(ctx, request{method: "GET", path: "/api/v1/groups", query: o.query()}, &p)
}

// GetGroup returns one group. Errors: ErrNotFound.
func (c *Client) GetGroup(ctx context.Context, name string) (*Group, error) {
	var g Group
	return &g, c.do(ctx, request{method: "GET", path: groupPath(name)}, &g)
}

// GroupSecret returns one group with its signing secret (GET
// /api/v1/groups/{g}?include=secret): operators and admins only, and the server
// audits each read as group.secret.read. Errors: ErrNotFound, ErrForbidden (role
// viewer).
func (c *Client) GroupSecret(ctx context.Context, name string) (*Group, error) {
	var g Group
	return &g, c.do(ctx, request{method: "GET", path: groupPath(name), query: url.Values{"include": {"secret"}}}, &g)
}

// PatchGroup applies a JSON merge patch of settings (e.g. {"rate_limit": 50}). A
// patch that moves endpoint_url to another host or port, or from https to http, drops the
// stored header values and basic-auth password it leaves masked, named in the
// answer's DroppedEndpointAuth. Errors: ErrNotFound, ErrInvalid.
func (c *Client) PatchGroup(ctx context.Context, name string, patch map[string]any) (*Group, error) {
	return c.PatchGroupWith(ctx, name, patch, PatchOptions{})
}

// PatchOptions changes how PatchGroupWith applies a patch. KeepEndpointAuth keeps
// the stored header values and basic-auth password when the patch moves
// endpoint_url to another host (`?keep_endpoint_auth=true`; role admin).
type PatchOptions struct {
	KeepEndpointAuth bool
}

// PatchGroupWith is PatchGroup with options. Errors: ErrNotFound, ErrInvalid, and
// ErrForbidden for KeepEndpointAuth without role admin.
func (c *Client) PatchGroupWith(ctx context.Context, name string, patch map[string]any, o PatchOptions) (*Group, error) {
	r := request{method: "PATCH", path: groupPath(name), body: patch}
	if o.KeepEndpointAuth {
		r.query = url.Values{"keep_endpoint_auth": {"true"}}
	}
	var g Group
	resp, err := c.doResp(ctx, r, &g)
	if err != nil {
		return nil, err
	}
	for _, name := range strings.Split(resp.Header.Get("Herald-Dropped-Endpoint-Auth"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			g.DroppedEndpointAuth = append(g.DroppedEndpointAuth, name)
		}
	}
	return &g, nil
}

// PauseGroup stops deliveries to a group; its backlog is kept. Errors: ErrNotFound.
func (c *Client) PauseGroup(ctx context.Context, name string) (*Group, error) {
	var g Group
	return &g, c.do(ctx, request{method: "POST", path: groupPath(name, "pause")}, &g)
}

// ResumeGroup restarts deliveries to a group. Errors: ErrNotFound.
func (c *Client) ResumeGroup(ctx context.Context, name string) (*Group, error) {
	var g Group
	return &g, c.do(ctx, request{method: "POST", path: groupPath(name, "resume")}, &g)
}

// ResetOffsets moves a group's cursors and returns them. Errors: ErrNotFound, ErrInvalid.
func (c *Client) ResetOffsets(ctx context.Context, name string, r OffsetReset) ([]Cursor, error) {
	var out Page[Cursor]
	err := c.do(ctx, request{method: "POST", path: groupPath(name, "offsets", "reset"), body: r}, &out)
	return out.Items, err
}

// GroupOffsets returns a group's cursors. Errors: ErrNotFound.
func (c *Client) GroupOffsets(ctx context.Context, name string) ([]Cursor, error) {
	var out Page[Cursor]
	err := c.do(ctx, request{method: "GET", path: groupPath(name, "offsets")}, &out)
	return out.Items, err
}

// GroupStats returns a group's live state. Errors: ErrNotFound.
func (c *Client) GroupStats(ctx context.Context, name string) (*GroupStats, error) {
	var s GroupStats
	return &s, c.do(ctx, request{method: "GET", path: groupPath(name, "stats")}, &s)
}

// keyAction names a blocked key; Queue 0 means every queue where it is blocked.
type keyAction struct {
	Key   string `json:"key"`
	Queue int64  `json:"queue,omitempty"`
}

// SkipBlockedKey drops the failed head messages of a blocked key of a group
// ordered by key (POST /api/v1/groups/{g}/blocked-keys/skip) so its later
// messages go on; the skipped ones become dead letters. Queue limits it to one
// queue id (0: every queue where the key is blocked). The owning dispatcher
// applies it within a heartbeat; the answer lists the blocked keys it applies to,
// with their pending action. Operators and admins. Errors: ErrNotFound (group,
// or key not blocked), ErrInvalid, ErrForbidden.
func (c *Client) SkipBlockedKey(ctx context.Context, group, key string, queue int64) ([]BlockedKey, error) {
	return c.blockedKeyAction(ctx, group, "skip", key, queue)
}

// ResumeBlockedKey sends the messages a blocked key waits on again now, with a
// fresh count of attempts (POST /api/v1/groups/{g}/blocked-keys/resume), also
// after a pause on exhausted attempts. Queue, answer and errors as SkipBlockedKey.
func (c *Client) ResumeBlockedKey(ctx context.Context, group, key string, queue int64) ([]BlockedKey, error) {
	return c.blockedKeyAction(ctx, group, "resume", key, queue)
}

func (c *Client) blockedKeyAction(ctx context.Context, group, action, key string, queue int64) ([]BlockedKey, error) {
	var out struct {
		BlockedKeys []BlockedKey `json:"blocked_keys"`
	}
	err := c.do(ctx, request{method: "POST", path: groupPath(group, "blocked-keys", action), body: keyAction{Key: key, Queue: queue}}, &out)
	return out.BlockedKeys, err
}

// GroupDeletion is what DeleteGroup removed: the group, whether its dead letters
// and attempt log went at once (Purged) or stay until PurgeAfter (RFC 3339) for
// inspection, and the dead-letter topic deleted with it ("" when none).
type GroupDeletion struct {
	Group      string `json:"group"`
	Purged     bool   `json:"purged"`
	PurgeAfter string `json:"purge_after,omitempty"`
	DLQTopic   string `json:"dead_letter_topic,omitempty"`
}

// DeleteGroup deletes a group (DELETE /api/v1/groups/{g}): its cursors,
// subscriptions, retries and `<group>.dlq` topic go at once and no POST starts
// after the answer. Its dead letters and attempt log are kept for the server's
// grace period (7 days by default; GroupDeletion.PurgeAfter) unless purge is
// set (`?purge=true`), which deletes them too. Errors: ErrNotFound; ErrConflict
// when another group subscribes to its dead-letter topic (nothing changes).
func (c *Client) DeleteGroup(ctx context.Context, name string, purge bool) (*GroupDeletion, error) {
	var q url.Values
	if purge {
		q = url.Values{"purge": {"true"}}
	}
	var d GroupDeletion
	return &d, c.do(ctx, request{method: "DELETE", path: groupPath(name), query: q}, &d)
}

// CreateGroupRaw creates a group from a JSON object of settings (the names of
// GroupSettings' JSON fields plus "name"); absent fields take the server's
// defaults, unlike CreateGroup, where a zero number is left out too. Errors as
// CreateGroup.
func (c *Client) CreateGroupRaw(ctx context.Context, spec map[string]any) (*Group, error) {
	var g Group
	return &g, c.do(ctx, request{method: "POST", path: "/api/v1/groups", body: spec}, &g)
}
