package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
)

// CursorDTO is one of a group's cursors: its committed offset in a queue, the
// queue's max offset, the lag between them in messages and in seconds (age of the
// oldest message not yet done), its open holes and its fencing version.
type CursorDTO struct {
	Queue      int64   `json:"queue"`
	Topic      string  `json:"topic"`
	Offset     int64   `json:"offset"`
	MaxOffset  int64   `json:"max_offset"`
	Lag        int64   `json:"lag"`
	LagSeconds float64 `json:"lag_seconds"`
	OpenHoles  int     `json:"open_holes"`
	Version    int64   `json:"version"`
	Owner      string  `json:"owner"`
}

func cursorDTOs(ps []control.CursorPosition, now time.Time) []CursorDTO {
	out := make([]CursorDTO, 0, len(ps))
	for _, p := range ps {
		out = append(out, CursorDTO{Queue: p.QueueID, Topic: p.Topic, Offset: p.Offset, MaxOffset: p.MaxOffset, Lag: p.Lag,
			LagSeconds: control.LagAge(p.OldestUndoneMS, now), OpenHoles: p.Holes, Version: p.Version, Owner: p.Owner})
	}
	return out
}

// offsetsResponse lists a group's cursors.
type offsetsResponse struct {
	Items []CursorDTO `json:"items"`
}

func (s *Server) groupOffsets(c echo.Context) error {
	_, ps, err := s.ctl.GroupCursors(c.Request().Context(), c.Param("group"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, offsetsResponse{Items: cursorDTOs(ps, time.Now())})
}

// offsetResetRequest moves cursors: To is earliest, latest or timestamp (then
// Timestamp is RFC 3339); Queues limits the reset to those queue ids (empty = all).
type offsetResetRequest struct {
	To        string  `json:"to"`
	Timestamp string  `json:"timestamp"`
	Queues    []int64 `json:"queues"`
}

func (s *Server) groupOffsetsReset(c echo.Context) error {
	var req offsetResetRequest
	if err := bodyOf(c, 64<<10, &req); err != nil {
		return err
	}
	ps, err := s.ctl.ResetOffsets(c.Request().Context(), actor(c), c.Param("group"),
		control.OffsetReset{To: req.To, Timestamp: req.Timestamp, Queues: req.Queues})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, offsetsResponse{Items: cursorDTOs(ps, time.Now())})
}
