package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
)

// tokenRefresh trades a valid JWT for a new one with a full TokenTTL, so the CLI
// and other long-lived callers need not keep a password: POST /api/v1/auth/refresh.
// A token revoked (token version changed) or expired is refused by requireJWT
// with 401 before this runs.
func (s *Server) tokenRefresh(c echo.Context) error {
	tok, exp, err := s.issueToken(userFrom(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, loginResponse{Token: tok, ExpiresAt: exp.UTC().Format(control.TimeFormat)})
}
