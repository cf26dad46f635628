package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/models"
)

// errNoSecret refuses tokens in a process configured without HERALD_JWT_SECRET.
var errNoSecret = errors.New("no JWT secret configured (HERALD_JWT_SECRET)")

// IssueToken signs a JWT for u, valid for auth.TokenTTL; the admin API returns it
// from a login, the console keeps it in its session cookie.
func (c *Control) IssueToken(u *models.User) (string, time.Time, error) {
	if len(c.secret) == 0 {
		return "", time.Time{}, errNoSecret
	}
	return auth.IssueToken(c.secret, u, time.Now())
}

// Authenticate returns the user a token names if it verifies (auth.ParseToken) and
// its token version is still the user's. Errors wrap models.ErrUnauthorized.
func (c *Control) Authenticate(ctx context.Context, raw string) (*models.User, error) {
	if len(c.secret) == 0 {
		return nil, fmt.Errorf("%w: %w", models.ErrUnauthorized, errNoSecret)
	}
	tok, err := auth.ParseToken(c.secret, raw)
	if err != nil {
		return nil, err
	}
	u, err := c.st.Accounts().UserGetByID(ctx, tok.UserID)
	if err != nil || u.TokenVersion != tok.TokenVersion {
		return nil, fmt.Errorf("%w: token revoked", models.ErrUnauthorized)
	}
	return u, nil
}

// TokenExpiry returns when a token expires, after verifying it as Authenticate
// does (the caller has usually just done so). Errors wrap models.ErrUnauthorized.
func (c *Control) TokenExpiry(raw string) (time.Time, error) {
	if len(c.secret) == 0 {
		return time.Time{}, fmt.Errorf("%w: %w", models.ErrUnauthorized, errNoSecret)
	}
	tok, err := auth.ParseToken(c.secret, raw)
	return tok.ExpiresAt, err
}
