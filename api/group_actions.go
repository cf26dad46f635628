package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
)

func (s *Server) groupPause(c echo.Context) error {
	g, err := s.ctl.PauseGroup(c.Request().Context(), actor(c), c.Param("group"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, groupDTO(g, false))
}

func (s *Server) groupResume(c echo.Context) error {
	g, err := s.ctl.ResumeGroup(c.Request().Context(), actor(c), c.Param("group"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, groupDTO(g, false))
}

// secretRotateRequest optionally sets how long the previous secret keeps signing
// (seconds; default control.DefaultSecretOverlapSeconds).
type secretRotateRequest struct {
	OverlapSeconds *int `json:"overlap_seconds"`
}

func (s *Server) groupSecretRotate(c echo.Context) error {
	var req secretRotateRequest
	if err := optionalBody(c, 4<<10, &req); err != nil {
		return err
	}
	overlap := control.DefaultSecretOverlapSeconds
	if req.OverlapSeconds != nil {
		overlap = *req.OverlapSeconds
	}
	g, err := s.ctl.RotateSecret(c.Request().Context(), actor(c), c.Param("group"), overlap)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, groupDTO(g, true))
}

// testSendRequest optionally replaces the sample body with any JSON value.
type testSendRequest struct {
	Body json.RawMessage `json:"body"`
}

func (s *Server) groupTestSend(c echo.Context) error {
	var req testSendRequest
	if err := optionalBody(c, 256<<10, &req); err != nil {
		return err
	}
	out, err := s.ctl.TestSend(c.Request().Context(), actor(c), c.Param("group"), req.Body)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
