package client

import (
	"context"
	"strconv"
)

// Node is a db node: a MySQL server (and database) holding queue tables. DSN is
// masked (`user:***@tcp(host:port)/db`); State is read-write, read-only, draining
// or retired; Queues counts the queues placed on it. Health is up, down or unknown
// (not probed yet, or retired) as the answering server sees it; HealthSince is when
// it entered that state (RFC 3339 UTC; "" when unknown) and HealthError the last
// failure while down.
type Node struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	DSN         string `json:"dsn"`
	Weight      int    `json:"weight"`
	State       string `json:"state"`
	Queues      int    `json:"queues"`
	Health      string `json:"health"`
	HealthSince string `json:"health_since"`
	HealthError string `json:"health_error"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

// NodeSpec registers a node: Name and DSN are required; Weight 0 and State ""
// take the server's defaults (100, read-only).
type NodeSpec struct {
	Name   string `json:"name"`
	DSN    string `json:"dsn"`
	Weight int    `json:"weight,omitempty"`
	State  string `json:"state,omitempty"`
}

func nodePath(id int64) string { return "/api/v1/nodes/" + strconv.FormatInt(id, 10) }

// CreateNode registers a node; Herald connects to its DSN first. Needs role admin.
// Errors: ErrInvalid (a field, an unreachable server, auto_increment_increment
// other than 1), ErrConflict (the name is taken or the database is a node already).
func (c *Client) CreateNode(ctx context.Context, spec NodeSpec) (*Node, error) {
	var n Node
	return &n, c.do(ctx, request{method: "POST", path: "/api/v1/nodes", body: spec}, &n)
}

// ListNodes returns one page of nodes, retired ones included.
func (c *Client) ListNodes(ctx context.Context, o ListOptions) (*Page[Node], error) {
	var p Page[Node]
	return &p, c.do(ctx, request{method: "GET", path: "/api/v1/nodes", query: o.query()}, &p)
}

// GetNode returns node id. Errors: ErrNotFound.
func (c *Client) GetNode(ctx context.Context, id int64) (*Node, error) {
	var n Node
	return &n, c.do(ctx, request{method: "GET", path: nodePath(id)}, &n)
}

// PatchNode applies a merge patch (name, dsn, weight, state) to node id. Needs role
// admin. Errors: ErrNotFound, ErrInvalid, ErrConflict (a retired node, or retiring
// one that still holds queues).
func (c *Client) PatchNode(ctx context.Context, id int64, patch map[string]any) (*Node, error) {
	var n Node
	return &n, c.do(ctx, request{method: "PATCH", path: nodePath(id), body: patch}, &n)
}

// NodeDrain is a drain's outcome: the node (draining) and the topics moved off it.
type NodeDrain struct {
	Node        Node     `json:"node"`
	MovedTopics []string `json:"moved_topics"`
}

// DrainNode sets node id draining (no new queues) and moves every topic with a
// queue on it to the other read-write nodes. Needs role admin. Errors: ErrNotFound,
// ErrInvalid (node 1, the control database, cannot drain), ErrConflict (retired).
func (c *Client) DrainNode(ctx context.Context, id int64) (*NodeDrain, error) {
	var d NodeDrain
	return &d, c.do(ctx, request{method: "POST", path: nodePath(id) + "/drain"}, &d)
}
