package client

import (
	"context"
	"strconv"
)

// APIKey is a publisher's key. Key (hk_…) is only filled by CreateAPIKey: it is
// shown once. Topics are names or patterns (* matches any run of characters).
type APIKey struct {
	ID         int64    `json:"id"`
	Name       string   `json:"name"`
	Key        string   `json:"key,omitempty"`
	Prefix     string   `json:"prefix"`
	Topics     []string `json:"topics"`
	CreatedAt  string   `json:"created_at"`
	LastUsedAt *string  `json:"last_used_at"`
	RevokedAt  *string  `json:"revoked_at"`
}

// CreateAPIKey creates a key that may publish to topics. Errors: ErrInvalid.
func (c *Client) CreateAPIKey(ctx context.Context, name string, topics []string) (*APIKey, error) {
	var k APIKey
	return &k, c.do(ctx, request{method: "POST", path: "/api/v1/api-keys", body: map[string]any{"name": name, "topics": topics}}, &k)
}

// ListAPIKeys returns one page of keys (never their secret part).
func (c *Client) ListAPIKeys(ctx context.Context, o ListOptions) (*Page[APIKey], error) {
	var p Page[APIKey]
	return &p, c.do(ctx, request{method: "GET", path: "/api/v1/api-keys", query: o.query()}, &p)
}

// RevokeAPIKey revokes a key; api instances refuse it within 5 s. Errors: ErrNotFound.
func (c *Client) RevokeAPIKey(ctx context.Context, id int64) (*APIKey, error) {
	var k APIKey
	return &k, c.do(ctx, request{method: "POST", path: "/api/v1/api-keys/" + strconv.FormatInt(id, 10) + "/revoke"}, &k)
}
