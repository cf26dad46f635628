package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// jwks serves the push-token public keys (RFC 7517), cacheable for a minute: a
// rotated-out key stays listed far longer than that.
func (s *Server) jwks(c echo.Context) error {
	set, err := s.ctl.PushKeysJWKS(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=60")
	return c.JSON(http.StatusOK, set)
}

func (s *Server) pushKeyRotate(c echo.Context) error {
	out, err := s.ctl.RotatePushKey(c.Request().Context(), actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
