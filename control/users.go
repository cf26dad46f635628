package control

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/models"
)

// UserSpec creates a user: Username is 1 to 120 bytes without control characters,
// Password 8 to 72 bytes (stored as bcrypt), Role admin, operator or viewer (empty:
// viewer).
type UserSpec struct {
	Username string
	Password string
	Role     models.Role
}

// UserPatch changes a user: a new Role and/or Password (nil: unchanged).
type UserPatch struct {
	Role     *models.Role
	Password *string
}

// userRecord is a user as the audit log records it (never the password hash).
type userRecord struct {
	ID        int64     `json:"id"`
	Username  string    `json:"username"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

func recordOfUser(u *models.User) userRecord {
	return userRecord{ID: u.ID, Username: u.Username, Role: string(u.Role), CreatedAt: u.CreatedAt.UTC()}
}

// CreateUser validates spec, stores the user with a bcrypt password hash and audits
// it without the password (user.create). Errors: a *models.ValidationError on
// /username, /role or /password, models.ErrConflict for a taken username.
func (c *Control) CreateUser(ctx context.Context, a Actor, spec UserSpec) (*models.User, error) {
	var v models.ValidationError
	if spec.Role == "" {
		spec.Role = models.RoleViewer
	}
	if !models.ValidUsername(spec.Username) {
		v.Add("/username", "usernames are 1 to 120 bytes of UTF-8 without control characters or leading or trailing spaces")
	}
	if !models.ValidRole(spec.Role) {
		v.Add("/role", "must be admin, operator or viewer")
	}
	if len(spec.Password) < 8 || len(spec.Password) > 72 {
		v.Add("/password", "passwords are 8 to 72 bytes")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	hash, err := auth.HashPassword(spec.Password, c.cost)
	if err != nil {
		return nil, err
	}
	u := &models.User{Username: spec.Username, PasswordHash: hash, Role: spec.Role}
	if err := c.st.Accounts().UserCreate(ctx, u); err != nil {
		return nil, err
	}
	c.Record(ctx, a, "user.create", u.Username, nil, recordOfUser(u))
	return u, nil
}

// PatchUser changes user id's role and/or password, which revokes their tokens; it
// refuses to demote the last admin. Audited as user.update (never the password).
// Errors: a *models.ValidationError on /role or /password, models.ErrNotFound,
// models.ErrLastAdmin.
func (c *Control) PatchUser(ctx context.Context, a Actor, id int64, p UserPatch) (*models.User, error) {
	before, err := c.st.Accounts().UserGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	var hash *string
	var v models.ValidationError
	if p.Role != nil && !models.ValidRole(*p.Role) {
		v.Add("/role", "must be admin, operator or viewer")
	}
	if p.Password != nil {
		h, err := auth.HashPassword(*p.Password, c.cost)
		if err != nil {
			v.Add("/password", "passwords are 8 to 72 bytes")
		}
		hash = &h
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := c.st.Accounts().UserUpdate(ctx, id, p.Role, hash); err != nil {
		return nil, err
	}
	u, err := c.st.Accounts().UserGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	c.Record(ctx, a, "user.update", u.Username, recordOfUser(before), map[string]any{"role": u.Role, "password_changed": hash != nil})
	return u, nil
}

// DeleteUser removes user id, refusing the last admin. Audited as user.delete.
// Errors: models.ErrNotFound, models.ErrLastAdmin.
func (c *Control) DeleteUser(ctx context.Context, a Actor, id int64) error {
	u, err := c.st.Accounts().UserGetByID(ctx, id)
	if err != nil {
		return err
	}
	if err := c.st.Accounts().UserDelete(ctx, id); err != nil {
		return err
	}
	c.Record(ctx, a, "user.delete", u.Username, recordOfUser(u), nil)
	return nil
}

// RevokeTokens bumps user id's token version, ending every session and JWT they
// hold. Audited as user.tokens.revoke. Errors: models.ErrNotFound.
func (c *Control) RevokeTokens(ctx context.Context, a Actor, id int64) error {
	u, err := c.st.Accounts().UserGetByID(ctx, id)
	if err != nil {
		return err
	}
	if err := c.st.Accounts().UserRevokeTokens(ctx, id); err != nil {
		return err
	}
	c.Record(ctx, a, "user.tokens.revoke", u.Username, nil, nil)
	return nil
}

// ListUsers returns one page of users in id order.
func (c *Control) ListUsers(ctx context.Context, p PageRequest) (Page[*models.User], error) {
	us, err := c.st.Accounts().UserList(ctx, p.After, p.Limit)
	if err != nil {
		return Page[*models.User]{}, err
	}
	return pageOf(us, p.Limit, func(u *models.User) int64 { return u.ID }), nil
}
