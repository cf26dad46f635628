package client

import (
	"context"
	"net/url"
)

// Topic is a topic as the admin API shows it. RetentionHours (default 168) is how
// long its messages are kept; RetentionPolicy is consumed (default: a message past
// retention goes only once every subscribed group has consumed it) or strict (it
// goes regardless). Retention, on reads of one topic only, is what retention holds
// back and what strict retention dropped.
type Topic struct {
	ID                int64           `json:"id"`
	Name              string          `json:"name"`
	Queues            []Queue         `json:"queues"`
	PublishedLastHour int64           `json:"published_last_hour"`
	RetentionHours    int             `json:"retention_hours"`
	RetentionPolicy   string          `json:"retention_policy"`
	Retention         *TopicRetention `json:"retention,omitempty"`
	// Moves, on reads of one topic only, lists the queues a move sealed that are
	// not retired yet, with what each group still owes them.
	Moves     []TopicMove `json:"moves,omitempty"`
	CreatedAt string      `json:"created_at"`
}

// TopicMove is one queue a move sealed: FromQueue (sealed, draining), ToQueue (where
// its key slots went), Slots (how many), Watermark (its last offset; -1 while
// sealing), State (sealing or draining) and, per group, what it still owes.
type TopicMove struct {
	FromQueue int64           `json:"from_queue"`
	ToQueue   int64           `json:"to_queue"`
	Slots     int             `json:"slots"`
	Watermark int64           `json:"watermark"`
	State     string          `json:"state"`
	Groups    []TopicMoveOwed `json:"groups"`
}

// TopicMoveOwed is what one group owes a sealed queue: Remaining messages at most
// and Retries (its retry rows there). The queue retires when every group owes 0.
type TopicMoveOwed struct {
	Group     string `json:"group"`
	Committed int64  `json:"committed_offset"`
	Remaining int64  `json:"remaining"`
	Retries   int64  `json:"retries"`
}

// TopicRetention is a topic's retention state: the messages past retention that
// lagging groups (HeldBackBy) hold back, and per group how many messages strict
// retention deleted before the group consumed them.
type TopicRetention struct {
	RetentionHours   int              `json:"retention_hours"`
	RetentionPolicy  string           `json:"retention_policy"`
	HeldBackMessages int64            `json:"held_back_messages"`
	HeldBackBy       []string         `json:"held_back_by"`
	ExpiredByGroup   map[string]int64 `json:"expired_by_group"`
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

// TopicSpec is a new topic: Queues partitions (1 to 64), RetentionHours (1 to
// 8,760) and RetentionPolicy (consumed or strict). Zero values take the server's
// defaults (4 queues, 168 h, consumed).
type TopicSpec struct {
	Name            string `json:"name"`
	Queues          int    `json:"queues,omitempty"`
	RetentionHours  int    `json:"retention_hours,omitempty"`
	RetentionPolicy string `json:"retention_policy,omitempty"`
}

// TopicPatch changes a topic; nil fields stay. Queues only grows the topic;
// ReadOnlyQueues replaces the set of queue ids that take no publishes;
// RetentionHours and RetentionPolicy replace its retention.
type TopicPatch struct {
	Queues          *int     `json:"queues,omitempty"`
	ReadOnlyQueues  *[]int64 `json:"read_only_queues,omitempty"`
	RetentionHours  *int     `json:"retention_hours,omitempty"`
	RetentionPolicy *string  `json:"retention_policy,omitempty"`
}

// CreateTopic creates a topic. Errors: ErrConflict when the name is taken,
// ErrInvalid.
func (c *Client) CreateTopic(ctx context.Context, spec TopicSpec) (*Topic, error) {
	var t Topic
	return &t, c.do(ctx, request{method: "POST", path: "/api/v1/topics", body: spec}, &t)
}

// ListTopics returns one page of topics, by name.
func (c *Client) ListTopics(ctx context.Context, o ListOptions) (*Page[Topic], error) {
	var p Page[Topic]
	return &p, c.do(ctx, request{method: "GET", path: "/api/v1/topics", query: o.query()}, &p)
}

// GetTopic returns one topic with its retention state. Errors: ErrNotFound.
func (c *Client) GetTopic(ctx context.Context, name string) (*Topic, error) {
	var t Topic
	return &t, c.do(ctx, request{method: "GET", path: "/api/v1/topics/" + pathEscape(name)}, &t)
}

// PatchTopic changes a topic. Errors: ErrNotFound, ErrInvalid.
func (c *Client) PatchTopic(ctx context.Context, name string, p TopicPatch) (*Topic, error) {
	var t Topic
	return &t, c.do(ctx, request{method: "PATCH", path: "/api/v1/topics/" + pathEscape(name), body: p}, &t)
}

// MoveTopic moves a topic's queues to db node toNode (node 1 re-homes it onto fresh
// queues): new queues take every publish at once, the old ones are sealed, drained
// by every group and retired. Needs role operator. Errors: ErrNotFound, ErrInvalid
// (an unknown node, nothing to move, not built), ErrConflict (the node is not
// read-write, or the topic is still moving).
func (c *Client) MoveTopic(ctx context.Context, name string, toNode int64) (*Topic, error) {
	var t Topic
	return &t, c.do(ctx, request{method: "POST", path: "/api/v1/topics/" + pathEscape(name) + "/move", body: map[string]int64{"to_node": toNode}}, &t)
}

// DeleteTopic deletes a topic, its queues and every message in them, and returns
// the groups whose subscription to it a forced delete removed (nil otherwise).
// Without force it is refused while a group subscribes (ErrConflict, nothing
// changes); with force (`?force=true`) those subscriptions, with their cursors
// and retries on the topic, are removed first. Errors: ErrNotFound, ErrConflict.
func (c *Client) DeleteTopic(ctx context.Context, name string, force bool) ([]string, error) {
	var q url.Values
	if force {
		q = url.Values{"force": {"true"}}
	}
	var out struct {
		UnsubscribedGroups []string `json:"unsubscribed_groups"`
	}
	err := c.do(ctx, request{method: "DELETE", path: "/api/v1/topics/" + pathEscape(name), query: q}, &out)
	return out.UnsubscribedGroups, err
}
