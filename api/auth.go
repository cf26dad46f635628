package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/models"
)

// keyCacheTTL bounds how long a revoked key keeps working on an api instance (at most 5 s, so a revocation is effective everywhere within it).
const keyCacheTTL = 5 * time.Second

// refreshAfter is how long after the request that found a cached key or topic past
// half its TTL the background re-read starts: the read (and the key's last_used_at
// UPDATE, a commit of its own) then runs after the request's own INSERT and commit,
// instead of beside them on the database and the CPUs, where it cost a lone message
// a second commit wait. The copy is still served only within its TTL.
const refreshAfter = 50 * time.Millisecond

// TokenTTL is the lifetime of console and admin JWTs (at most 1 h; a revoked user's token_version ends them sooner).
const TokenTTL = auth.TokenTTL

func apiKeyFrom(c echo.Context) *models.APIKey { return c.Get("apikey").(*models.APIKey) }

func bearer(c echo.Context) string {
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// errBadKey is the one answer to a key that does not authenticate, whether its
// prefix is unknown, its secret wrong or the key revoked: the answer tells a
// guesser nothing about which part was right.
var errBadKey = problem(ProblemUnauthorized, "invalid or revoked API key")

// dummyKeyHash stands in for the stored digest when no key has the prefix, so an
// unknown prefix costs the same hash and comparison as a known one.
var dummyKeyHash = make([]byte, 32) // a SHA-256 digest no key has

// requireAPIKey authenticates publishers: looks the key up by prefix (cached ≤5 s)
// and compares SHA-256 digests in constant time. Every failure but a missing or
// malformed header answers errBadKey; a prefix that cannot exist (models.ValidKeyPrefix)
// never reaches the database.
func (s *Server) requireAPIKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw := bearer(c)
		prefix, ok := auth.ParseAPIKey(raw)
		if !ok {
			return problem(ProblemUnauthorized, "send Authorization: Bearer hk_…")
		}
		want := dummyKeyHash
		k, err := s.apiKey(c.Request().Context(), prefix)
		if err == nil {
			want = k.Hash
		} else if !errors.Is(err, models.ErrNotFound) {
			return err
		}
		if !auth.APIKeyMatches(raw, want) || k == nil || k.RevokedAt != nil {
			return errBadKey
		}
		c.Set("apikey", k)
		return next(c)
	}
}

// apiKey returns the key with prefix from a 5 s refresh-ahead cache (aheadcache):
// a key that publishes at least every 2.5 s never waits for the lookup, and a
// revocation takes effect within keyCacheTTL (at once on this instance). Every read
// notes the key as used, off the request's path.
func (s *Server) apiKey(ctx context.Context, prefix string) (*models.APIKey, error) {
	return s.keys.Get(ctx, prefix)
}

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type loginResponse struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expires_at"`
}

// login checks a username and password (control.Login) and returns an HS256 JWT valid
// for TokenTTL.
func (s *Server) login(c echo.Context) error {
	body, err := readBody(c, 64<<10)
	if err != nil {
		return err
	}
	var req loginRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	u, err := s.ctl.Login(c.Request().Context(), req.Username, req.Password, c.RealIP())
	if err != nil {
		return err
	}
	tok, exp, err := s.issueToken(u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, loginResponse{Token: tok, ExpiresAt: exp.UTC().Format(control.TimeFormat)})
}

func (s *Server) issueToken(u *models.User) (string, time.Time, error) { return s.ctl.IssueToken(u) }

// requireJWT authenticates operators: HS256 only, expiry required, issuer herald,
// and the user's current token_version.
func (s *Server) requireJWT(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw := bearer(c)
		if raw == "" {
			return problem(ProblemUnauthorized, "send Authorization: Bearer <JWT from /api/v1/auth/login>")
		}
		u, err := s.userFromJWT(c.Request().Context(), raw)
		if err != nil {
			return err
		}
		c.Set("user", u)
		return next(c)
	}
}

// userFromJWT verifies a JWT (HS256 only, expiry required, issuer herald) and returns
// its user if the token version is still current; otherwise an unauthorized problem.
// The API reads the token from Authorization, the console from its session cookie.
func (s *Server) userFromJWT(ctx context.Context, raw string) (*models.User, error) {
	u, err := s.ctl.Authenticate(ctx, raw)
	if err != nil {
		return nil, problem(ProblemUnauthorized, strings.TrimPrefix(err.Error(), "unauthorized: "))
	}
	return u, nil
}

func userFrom(c echo.Context) *models.User { return c.Get("user").(*models.User) }

// requireRole lets through users at least as privileged as r.
func requireRole(r models.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !userFrom(c).Role.AtLeast(r) {
				return problem(ProblemForbidden, fmt.Sprintf("needs role %s", r))
			}
			return next(c)
		}
	}
}
