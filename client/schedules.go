package client

import (
	"context"
	"encoding/json"
)

// Schedule is a schedule as the admin API shows it: it publishes its message
// (Body as JSON when its content type is JSON, else BodyBase64) to Topic on every
// tick of Cron in Timezone. State is active or paused; NextRuns are its next five
// ticks (RFC 3339, empty while paused); LastRunAt is the tick last published
// (empty before the first); Runs counts the messages published.
type Schedule struct {
	ID          int64             `json:"id"`
	Name        string            `json:"name"`
	Topic       string            `json:"topic"`
	Cron        string            `json:"cron"`
	Timezone    string            `json:"timezone"`
	State       string            `json:"state"`
	Tag         string            `json:"tag"`
	Key         string            `json:"key"`
	ContentType string            `json:"content_type"`
	Headers     map[string]string `json:"headers"`
	Body        json.RawMessage   `json:"body,omitempty"`
	BodyBase64  string            `json:"body_base64,omitempty"`
	NextRuns    []string          `json:"next_runs"`
	LastRunAt   string            `json:"last_run_at,omitempty"`
	Runs        int64             `json:"runs"`
	CreatedBy   string            `json:"created_by"`
	CreatedAt   string            `json:"created_at"`
}

// ScheduleSpec is a new schedule: Name, the Topic it publishes to, Cron (five
// fields, an optional leading seconds field, or @hourly, @daily, @every 10m …),
// Timezone (IANA; empty: UTC), the Message each tick publishes (Body,
// ContentType, Tag, Key, Headers; Delay and DeliverAt must be zero) and Paused to
// create it paused.
type ScheduleSpec struct {
	Name     string
	Topic    string
	Cron     string
	Timezone string
	Message  Message
	Paused   bool
}

// CreateSchedule creates a schedule (POST /api/v1/schedules; operator or admin).
// Each tick is published once, whatever the number of Herald processes; ticks
// missed while Herald was down are published once, together, on its return.
// Errors: ErrConflict when the name is taken, ErrInvalid (a bad expression, time
// zone, topic or message).
func (c *Client) CreateSchedule(ctx context.Context, spec ScheduleSpec) (*Schedule, error) {
	w := spec.Message.wire()
	body := struct {
		Name     string `json:"name"`
		Topic    string `json:"topic"`
		Cron     string `json:"cron"`
		Timezone string `json:"timezone,omitempty"`
		Paused   bool   `json:"paused,omitempty"`
		wireMessage
	}{spec.Name, spec.Topic, spec.Cron, spec.Timezone, spec.Paused, w}
	if err := checkText(body); err != nil {
		return nil, err
	}
	var s Schedule
	return &s, c.do(ctx, request{method: "POST", path: "/api/v1/schedules", body: body}, &s)
}

// SchedulePatch changes a schedule; nil fields stay. Message replaces the
// message whole (body, content type, tag, key and headers) when set; its Delay and
// DeliverAt must be zero. A new Cron or Timezone starts from its first tick after
// now.
type SchedulePatch struct {
	Topic    *string
	Cron     *string
	Timezone *string
	Message  *Message
}

// UpdateSchedule changes a schedule (PATCH /api/v1/schedules/{name}, a JSON merge
// patch; operator or admin) and returns it. Errors: ErrNotFound, ErrInvalid.
func (c *Client) UpdateSchedule(ctx context.Context, name string, p SchedulePatch) (*Schedule, error) {
	body := map[string]any{}
	for k, v := range map[string]*string{"topic": p.Topic, "cron": p.Cron, "timezone": p.Timezone} {
		if v != nil {
			body[k] = *v
		}
	}
	if m := p.Message; m != nil {
		w := m.wire()
		body["content_type"], body["tag"], body["key"], body["headers"] = w.ContentType, w.Tag, w.Key, w.Headers
		if w.Headers == nil {
			body["headers"] = map[string]string{}
		}
		if w.BodyBase64 != nil {
			body["body_base64"] = *w.BodyBase64
		} else {
			body["body"] = w.Body
		}
		if w.ContentType == "" {
			body["content_type"] = nil // the server's default for the body's form
		}
	}
	if err := checkText(body); err != nil {
		return nil, err
	}
	var s Schedule
	return &s, c.do(ctx, request{method: "PATCH", path: schedulePath(name), body: body}, &s)
}

// ListSchedules returns one page of schedules, oldest first.
func (c *Client) ListSchedules(ctx context.Context, o ListOptions) (*Page[Schedule], error) {
	var p Page[Schedule]
	return &p, c.do(ctx, request{method: "GET", path: "/api/v1/schedules", query: o.query()}, &p)
}

// GetSchedule returns one schedule. Errors: ErrNotFound.
func (c *Client) GetSchedule(ctx context.Context, name string) (*Schedule, error) {
	var s Schedule
	return &s, c.do(ctx, request{method: "GET", path: schedulePath(name)}, &s)
}

// PauseSchedule stops a schedule; ticks that fall while it is paused are skipped.
// Needs role operator. Errors: ErrNotFound.
func (c *Client) PauseSchedule(ctx context.Context, name string) (*Schedule, error) {
	var s Schedule
	return &s, c.do(ctx, request{method: "POST", path: schedulePath(name) + "/pause"}, &s)
}

// ResumeSchedule lets a paused schedule fire again from its first tick after now.
// Needs role operator. Errors: ErrNotFound.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (*Schedule, error) {
	var s Schedule
	return &s, c.do(ctx, request{method: "POST", path: schedulePath(name) + "/resume"}, &s)
}

// DeleteSchedule deletes a schedule; a tick it already published is still
// delivered. Needs role operator. Errors: ErrNotFound.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	return c.do(ctx, request{method: "DELETE", path: schedulePath(name)}, nil)
}

func schedulePath(name string) string { return "/api/v1/schedules/" + pathEscape(name) }
