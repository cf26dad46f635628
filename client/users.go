package client

import (
	"context"
	"strconv"
)

// User is a console and admin-API user; Role is admin, operator or viewer. The
// password is never shown.
type User struct {
	ID        int64  `json:"id"`
	Username  string `json:"username"`
	Role      string `json:"role"`
	CreatedAt string `json:"created_at"`
}

// UserSpec is a new user: Username, Password (8 to 72 bytes) and Role ("" takes
// the server's default, viewer).
type UserSpec struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Role     string `json:"role,omitempty"`
}

// UserPatch changes a user's Role and/or Password (nil: unchanged). Either change
// revokes the user's tokens.
type UserPatch struct {
	Role     *string `json:"role,omitempty"`
	Password *string `json:"password,omitempty"`
}

func userPath(id int64) string { return "/api/v1/users/" + strconv.FormatInt(id, 10) }

// ListUsers returns one page of users. Needs role admin.
func (c *Client) ListUsers(ctx context.Context, o ListOptions) (*Page[User], error) {
	var p Page[User]
	return &p, c.do(ctx, request{method: "GET", path: "/api/v1/users", query: o.query()}, &p)
}

// CreateUser creates a user. Needs role admin. Errors: ErrConflict (the username
// is taken), ErrInvalid.
func (c *Client) CreateUser(ctx context.Context, spec UserSpec) (*User, error) {
	var u User
	return &u, c.do(ctx, request{method: "POST", path: "/api/v1/users", body: spec}, &u)
}

// PatchUser changes user id's role or password and revokes its tokens. Needs role
// admin. Errors: ErrNotFound, ErrInvalid, ErrConflict (demoting the last admin).
func (c *Client) PatchUser(ctx context.Context, id int64, p UserPatch) (*User, error) {
	var u User
	return &u, c.do(ctx, request{method: "PATCH", path: userPath(id), body: p}, &u)
}

// DeleteUser deletes user id; its tokens stop working. Needs role admin. Errors:
// ErrNotFound, ErrConflict (the last admin).
func (c *Client) DeleteUser(ctx context.Context, id int64) error {
	return c.do(ctx, request{method: "DELETE", path: userPath(id)}, nil)
}

// RevokeUserTokens revokes every token issued to user id so far; the user logs in
// again. Needs role admin. Errors: ErrNotFound.
func (c *Client) RevokeUserTokens(ctx context.Context, id int64) error {
	return c.do(ctx, request{method: "POST", path: userPath(id) + "/revoke-tokens"}, nil)
}
