package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/bcrypt"

	"github.com/heraldhq/herald/models"
)

// keyCacheTTL bounds how long a revoked key keeps working on an api instance (DESIGN §8: ≤5 s).
const keyCacheTTL = 5 * time.Second

// TokenTTL is the lifetime of console and admin JWTs (DESIGN §8: at most 1 h).
const TokenTTL = time.Hour

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewAPIKey returns a fresh key `hk_<prefix>_<secret>` (32 random bytes of secret),
// its prefix and the SHA-256 to store. Keys are random, so a fast hash is right; a
// slow KDF would only tax every publish (DESIGN §8).
func NewAPIKey() (key, prefix string, hash []byte) {
	p := make([]byte, 5)
	sec := make([]byte, 32)
	_, _ = rand.Read(p)
	_, _ = rand.Read(sec)
	prefix = strings.ToLower(keyEncoding.EncodeToString(p))
	key = "hk_" + prefix + "_" + strings.ToLower(keyEncoding.EncodeToString(sec))
	sum := sha256.Sum256([]byte(key))
	return key, prefix, sum[:]
}

type cachedKey struct {
	k  *models.APIKey
	at time.Time
}

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
var errBadKey = problem("unauthorized", "invalid or revoked API key")

// dummyKeyHash stands in for the stored digest when no key has the prefix, so an
// unknown prefix costs the same hash and comparison as a known one.
var dummyKeyHash = make([]byte, sha256.Size)

// requireAPIKey authenticates publishers: looks the key up by prefix (cached ≤5 s)
// and compares SHA-256 digests in constant time. Every failure but a missing or
// malformed header answers errBadKey; a prefix that cannot exist (models.ValidKeyPrefix)
// never reaches the database.
func (s *Server) requireAPIKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw := bearer(c)
		prefix, ok := keyPrefix(raw)
		if !ok {
			return problem("unauthorized", "send Authorization: Bearer hk_…")
		}
		want := dummyKeyHash
		k, err := s.apiKey(c.Request().Context(), prefix)
		if err == nil {
			want = k.Hash
		} else if !errors.Is(err, models.ErrNotFound) {
			return err
		}
		sum := sha256.Sum256([]byte(raw))
		if subtle.ConstantTimeCompare(sum[:], want) != 1 || k == nil || k.RevokedAt != nil {
			return errBadKey
		}
		c.Set("apikey", k)
		return next(c)
	}
}

// keyPrefix returns the prefix of a key shaped `hk_<prefix>_<secret>`; ok is false
// for anything else, including a prefix that is not lower-case base32.
func keyPrefix(raw string) (prefix string, ok bool) {
	rest, ok := strings.CutPrefix(raw, "hk_")
	if !ok {
		return "", false
	}
	prefix, secret, ok := strings.Cut(rest, "_")
	if !ok || secret == "" || !models.ValidKeyPrefix(prefix) {
		return "", false
	}
	return prefix, true
}

func (s *Server) apiKey(ctx context.Context, prefix string) (*models.APIKey, error) {
	if v, ok := s.keys.Load(prefix); ok {
		ck := v.(*cachedKey)
		if time.Since(ck.at) < keyCacheTTL {
			return ck.k, nil
		}
	}
	k, err := s.st.APIKeyGetByPrefix(ctx, prefix)
	if err != nil {
		return nil, err
	}
	s.keys.Store(prefix, &cachedKey{k: k, at: time.Now()})
	go func() { _ = s.st.APIKeyTouch(context.WithoutCancel(ctx), k.ID) }()
	return k, nil
}

// claims are Herald's JWT claims: the user id as subject plus the token version that
// revokes all of a user's tokens when bumped.
type claims struct {
	Role         string `json:"role"`
	TokenVersion int64  `json:"tv"`
	jwt.RegisteredClaims
}

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type loginResponse struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expires_at"`
}

// login checks a username and password (checkLogin) and returns an HS256 JWT valid
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
	u, err := s.checkLogin(c, req.Username, req.Password)
	if err != nil {
		return err
	}
	tok, exp, err := s.issueToken(u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, loginResponse{Token: tok, ExpiresAt: exp.UTC().Format(timeFormat)})
}

func (s *Server) issueToken(u *models.User) (string, time.Time, error) {
	now := time.Now()
	exp := now.Add(TokenTTL)
	cl := claims{Role: string(u.Role), TokenVersion: u.TokenVersion, RegisteredClaims: jwt.RegisteredClaims{
		Subject: strconv.FormatInt(u.ID, 10), Issuer: "herald", IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp),
	}}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, cl).SignedString([]byte(s.cfg.JWTSecret))
	return tok, exp, err
}

// requireJWT authenticates operators: HS256 only, expiry required, issuer herald,
// and the user's current token_version.
func (s *Server) requireJWT(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw := bearer(c)
		if raw == "" {
			return problem("unauthorized", "send Authorization: Bearer <JWT from /api/v1/auth/login>")
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
	var cl claims
	_, err := jwt.ParseWithClaims(raw, &cl, func(*jwt.Token) (any, error) { return []byte(s.cfg.JWTSecret), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithIssuer("herald"))
	if err != nil {
		return nil, problem("unauthorized", "invalid token: "+err.Error())
	}
	id, _ := strconv.ParseInt(cl.Subject, 10, 64)
	u, err := s.st.UserGetByID(ctx, id)
	if err != nil || u.TokenVersion != cl.TokenVersion {
		return nil, problem("unauthorized", "token revoked")
	}
	return u, nil
}

func userFrom(c echo.Context) *models.User { return c.Get("user").(*models.User) }

var roleRank = map[models.Role]int{models.RoleViewer: 1, models.RoleOperator: 2, models.RoleAdmin: 3}

// requireRole lets through users at least as privileged as r.
func requireRole(r models.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if roleRank[userFrom(c).Role] < roleRank[r] {
				return problem("forbidden", fmt.Sprintf("needs role %s", r))
			}
			return next(c)
		}
	}
}

// BcryptCost is the bcrypt work factor for new password hashes (default 12). Tests
// lower it; checking a password uses the cost stored in its hash.
var BcryptCost = 12

// HashPassword returns the bcrypt hash of a user's password (BcryptCost).
func HashPassword(pw string) (string, error) {
	if len(pw) < 8 || len(pw) > 72 {
		return "", &models.ValidationError{Errors: []models.FieldError{{Pointer: "/password", Detail: "passwords are 8 to 72 bytes"}}}
	}
	b, err := bcrypt.GenerateFromPassword([]byte(pw), BcryptCost)
	return string(b), err
}
