package client

import "context"

// Topic is a topic as the admin API shows it.
type Topic struct {
	ID                int64   `json:"id"`
	Name              string  `json:"name"`
	Queues            []Queue `json:"queues"`
	PublishedLastHour int64   `json:"published_last_hour"`
	CreatedAt         string  `json:"created_at"`
}

// Queue is one partition of a topic; State is read_write or read_only.
type Queue struct {
	ID        int64  `json:"id"`
	Position  int    `json:"position"`
	State     string `json:"state"`
	Node      int64  `json:"node"`
	MinOffset int64  `json:"min_offset"`
	MaxOffset int64  `json:"max_offset"`
}

// TopicPatch changes a topic; nil fields stay. Queues only grows the topic;
// ReadOnlyQueues replaces the set of queue ids that take no publishes.
type TopicPatch struct {
	Queues         *int     `json:"queues,omitempty"`
	ReadOnlyQueues *[]int64 `json:"read_only_queues,omitempty"`
}

// CreateTopic creates a topic with queues partitions (0: the server's default).
// Errors: ErrConflict when the name is taken, ErrInvalid.
func (c *Client) CreateTopic(ctx context.Context, name string, queues int) (*Topic, error) {
	body := map[string]any{"name": name}
	if queues > 0 {
		body["queues"] = queues
	}
	var t Topic
	return &t, c.do(ctx, request{method: "POST", path: "/api/v1/topics", body: body}, &t)
}

// ListTopics returns one page of topics, by name.
func (c *Client) ListTopics(ctx context.Context, o ListOptions) (*Page[Topic], error) {
	var p Page[Topic]
	return &p, c.do(ctx, request{method: "GET", path: "/api/v1/topics", query: o.query()}, &p)
}

// GetTopic returns one topic. Errors: ErrNotFound.
func (c *Client) GetTopic(ctx context.Context, name string) (*Topic, error) {
	var t Topic
	return &t, c.do(ctx, request{method: "GET", path: "/api/v1/topics/" + pathEscape(name)}, &t)
}

// PatchTopic changes a topic. Errors: ErrNotFound, ErrInvalid.
func (c *Client) PatchTopic(ctx context.Context, name string, p TopicPatch) (*Topic, error) {
	var t Topic
	return &t, c.do(ctx, request{method: "PATCH", path: "/api/v1/topics/" + pathEscape(name), body: p}, &t)
}

// DeleteTopic deletes a topic and its queues. Errors: ErrNotFound, ErrConflict
// while a group subscribes to it.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	return c.do(ctx, request{method: "DELETE", path: "/api/v1/topics/" + pathEscape(name)}, nil)
}
