package client

import (
	"context"
	"net/url"
)

// Subscription binds a group to a topic; empty Tags means every tag.
type Subscription struct {
	Topic string   `json:"topic"`
	Tags  []string `json:"tags"`
}

// GroupSettings are a group's writable settings (units in the names: ms, bytes,
// messages per second). In a GroupSpec a zero number takes the server's default.
type GroupSettings struct {
	EndpointURL   string         `json:"endpoint_url"`
	Subscriptions []Subscription `json:"subscriptions"`
	BatchSize     int            `json:"batch_size,omitempty"`
	BatchMaxBytes int            `json:"batch_max_bytes,omitempty"`
	BatchWindowMS int            `json:"batch_window_ms,omitempty"`
	MaxInFlight   int            `json:"max_in_flight,omitempty"`
	RateLimit     int            `json:"rate_limit,omitempty"`
	TimeoutMS     int            `json:"timeout_ms,omitempty"`
	MaxAttempts   int            `json:"max_attempts,omitempty"`
	RetrySchedule []int          `json:"retry_schedule,omitempty"`
	Ordered       bool           `json:"ordered,omitempty"`
	ConsumeFrom   string         `json:"consume_from,omitempty"`
}

// GroupSpec is a new consumer group: a name and its settings.
type GroupSpec struct {
	Name string `json:"name"`
	GroupSettings
}

// Group is a consumer group as the admin API shows it. SigningSecret (whsec_…)
// is only filled by CreateGroup and secret rotation.
type Group struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	GroupSettings
	SigningSecret string `json:"signing_secret"`
	Status        string `json:"status"`
	PausedReason  string `json:"paused_reason"`
	ConfigVersion int64  `json:"config_version"`
	CreatedAt     string `json:"created_at"`
	UpdatedAt     string `json:"updated_at"`
}

// GroupStats is a group's live state: lag, effective rate, breaker, retries and
// pending dead letters.
type GroupStats struct {
	Group               string  `json:"group"`
	Status              string  `json:"status"`
	PausedReason        string  `json:"paused_reason"`
	LagMessages         int64   `json:"lag_messages"`
	LagSeconds          float64 `json:"lag_seconds"`
	RateLimit           int     `json:"rate_limit"`
	EffectiveRate       float64 `json:"effective_rate"`
	ConsecutiveFailures int     `json:"consecutive_failures"`
	SuccessesMinute     int     `json:"successes_last_minute"`
	FailuresMinute      int     `json:"failures_last_minute"`
	LastStatus          int     `json:"last_status"`
	LastError           string  `json:"last_error"`
	Breaker             string  `json:"breaker"`
	RetryMessages       int64   `json:"retry_messages"`
	DeadLetters         int64   `json:"dead_letters_pending"`
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

// PatchGroup applies a JSON merge patch of settings (e.g. {"rate_limit": 50}).
// Errors: ErrNotFound, ErrInvalid.
func (c *Client) PatchGroup(ctx context.Context, name string, patch map[string]any) (*Group, error) {
	var g Group
	return &g, c.do(ctx, request{method: "PATCH", path: groupPath(name), body: patch}, &g)
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

// DeleteGroup deletes a group, its cursors, retries and dead letters
// (DELETE /api/v1/groups/{g}). Errors: ErrNotFound.
func (c *Client) DeleteGroup(ctx context.Context, name string) error {
	return c.do(ctx, request{method: "DELETE", path: groupPath(name)}, nil)
}

// CreateGroupRaw creates a group from a JSON object of settings (the names of
// GroupSettings' JSON fields plus "name"); absent fields take the server's
// defaults, unlike CreateGroup, where a zero number is left out too. Errors as
// CreateGroup.
func (c *Client) CreateGroupRaw(ctx context.Context, spec map[string]any) (*Group, error) {
	var g Group
	return &g, c.do(ctx, request{method: "POST", path: "/api/v1/groups", body: spec}, &g)
}
