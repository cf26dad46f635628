package auth

import (
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/heraldhq/herald/models"
)

// TokenTTL is the lifetime of console and admin JWTs: at most 1 h.
const TokenTTL = time.Hour

// claims are Herald's JWT claims: the user id as subject plus the token version that
// revokes all of a user's tokens when bumped.
type claims struct {
	Role         string `json:"role"`
	TokenVersion int64  `json:"tv"`
	jwt.RegisteredClaims
}

// Token is what a verified JWT says: whose it is and at which token version.
type Token struct {
	UserID       int64
	TokenVersion int64
	// ExpiresAt is the token's exp claim; a console session or the CLI refreshes
	// the token once less than half of TokenTTL is left.
	ExpiresAt time.Time
}

// IssueToken signs an HS256 JWT for u with secret, valid for TokenTTL from now, and
// returns it with its expiry.
func IssueToken(secret []byte, u *models.User, now time.Time) (string, time.Time, error) {
	exp := now.Add(TokenTTL)
	cl := claims{Role: string(u.Role), TokenVersion: u.TokenVersion, RegisteredClaims: jwt.RegisteredClaims{
		Subject: strconv.FormatInt(u.ID, 10), Issuer: "herald", IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp),
	}}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, cl).SignedString(secret)
	return tok, exp, err
}

// ParseToken verifies raw (HS256 only, expiry required, issuer herald). Errors wrap
// models.ErrUnauthorized. The caller still checks the user's current token version.
func ParseToken(secret []byte, raw string) (Token, error) {
	var cl claims
	_, err := jwt.ParseWithClaims(raw, &cl, func(*jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithIssuer("herald"))
	if err != nil {
		return Token{}, fmt.Errorf("%w: invalid token: %w", models.ErrUnauthorized, err)
	}
	id, _ := strconv.ParseInt(cl.Subject, 10, 64)
	return Token{UserID: id, TokenVersion: cl.TokenVersion, ExpiresAt: cl.ExpiresAt.Time}, nil
}
