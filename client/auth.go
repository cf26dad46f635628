package client

import (
	"context"
	"time"
)

// Token is an admin JWT and the time it expires (1 h after it was issued).
type Token struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Login exchanges a username and password for a Token (POST /api/v1/auth/login)
// and uses it for the client's next calls. Errors: ErrUnauthorized, ErrRateLimited.
func (c *Client) Login(ctx context.Context, username, password string) (Token, error) {
	var t Token
	err := c.do(ctx, request{method: "POST", path: "/api/v1/auth/login",
		body: map[string]string{"username": username, "password": password}}, &t)
	if err == nil {
		c.token = t.Token
	}
	return t, err
}

// Refresh trades the client's still valid token for a new one with a full
// lifetime (POST /api/v1/auth/refresh) and uses it from then on. A token revoked
// or expired answers ErrUnauthorized; log in again then.
func (c *Client) Refresh(ctx context.Context) (Token, error) {
	var t Token
	err := c.do(ctx, request{method: "POST", path: "/api/v1/auth/refresh"}, &t)
	if err == nil {
		c.token = t.Token
	}
	return t, err
}
