package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/models"
)

// refreshSession re-issues the session cookie of an authenticated request once
// its token has less than half of auth.TokenTTL (1 h) left, so a console left
// open and in use is never signed out mid-task, while an idle one still expires
// within the hour. The new cookie has the same attributes as the login's, Secure
// included (secureCookie: HERALD_COOKIE_SECURE or TLS).
func (s *Console) refreshSession(c echo.Context, raw string, u *models.User) {
	exp, err := s.ctl.TokenExpiry(raw)
	if err != nil || time.Until(exp) > auth.TokenTTL/2 {
		return
	}
	tok, exp, err := s.ctl.IssueToken(u)
	if err != nil {
		return // the current token still works; the next request tries again
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: tok, Path: consolePath, Expires: exp, HttpOnly: true,
		Secure: secureCookie(c), SameSite: http.SameSiteStrictMode})
}
