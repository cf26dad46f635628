package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
)

// resendRequest selects messages by queue and offsets (inclusive) or by publish time.
type resendRequest struct {
	Queue      int64      `json:"queue"`
	FromOffset int64      `json:"from_offset"`
	ToOffset   int64      `json:"to_offset"`
	FromTime   *time.Time `json:"from_time"`
	ToTime     *time.Time `json:"to_time"`
}

func (s *Server) groupMessageResend(c echo.Context) error {
	out, err := s.ctl.ResendMessage(c.Request().Context(), actor(c), c.Param("group"), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, out)
}

func (s *Server) groupResend(c echo.Context) error {
	var req resendRequest
	if err := bodyOf(c, 4<<10, &req); err != nil {
		return err
	}
	out, err := s.ctl.ResendMessages(c.Request().Context(), actor(c), c.Param("group"), control.ResendRange{
		Queue: req.Queue, FromOffset: req.FromOffset, ToOffset: req.ToOffset, FromTime: req.FromTime, ToTime: req.ToTime})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, out)
}
