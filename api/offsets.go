package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
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

func cursorDTOs(ps []store.CursorPosition, now time.Time) []CursorDTO {
	out := make([]CursorDTO, 0, len(ps))
	for _, p := range ps {
		out = append(out, CursorDTO{Queue: p.QueueID, Topic: p.Topic, Offset: p.Offset, MaxOffset: p.MaxOffset, Lag: p.Lag,
			LagSeconds: store.LagAge(p.OldestUndoneMS, now), OpenHoles: p.Holes, Version: p.Version, Owner: p.Owner})
	}
	return out
}

// offsetsResponse lists a group's cursors.
type offsetsResponse struct {
	Items []CursorDTO `json:"items"`
}

func (s *Server) groupOffsets(c echo.Context) error {
	ctx := c.Request().Context()
	g, err := s.st.GroupGetByName(ctx, c.Param("group"))
	if err != nil {
		return err
	}
	ps, err := s.st.GroupPositions(ctx, []int64{g.ID}, true)
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
	body, err := readBody(c, 64<<10)
	if err != nil {
		return err
	}
	var req offsetResetRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	ps, err := s.resetOffsets(c, c.Param("group"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, offsetsResponse{Items: cursorDTOs(ps, time.Now())})
}

// resetOffsets validates a reset, applies it (bumping cursor versions, so owners
// reload), wakes the dispatchers and audits it. Shared by the API and the console.
func (s *Server) resetOffsets(c echo.Context, name string, req offsetResetRequest) ([]store.CursorPosition, error) {
	ctx := c.Request().Context()
	var v models.ValidationError
	to := req.To
	switch req.To {
	case models.ConsumeEarliest, models.ConsumeLatest:
		if req.Timestamp != "" {
			v.Add("/timestamp", "give a timestamp only with \"to\": \"timestamp\"")
		}
	case "timestamp":
		ts, err := time.Parse(time.RFC3339Nano, req.Timestamp)
		if err != nil {
			v.Add("/timestamp", "must be an RFC 3339 time such as 2026-11-29T14:00:00Z")
		}
		to = ts.UTC().Format(time.RFC3339Nano)
	default:
		v.Add("/to", "must be earliest, latest or timestamp")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	g, err := s.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	before, err := s.st.GroupPositions(ctx, []int64{g.ID}, false)
	if err != nil {
		return nil, err
	}
	if _, err := s.st.CursorsReset(ctx, g.ID, to, req.Queues); err != nil {
		return nil, err
	}
	_ = s.notifier.Group(ctx, g.ID)
	after, err := s.st.GroupPositions(ctx, []int64{g.ID}, true)
	if err != nil {
		return nil, err
	}
	s.audit(c, "group.offsets.reset", g.Name, offsetsOf(before), map[string]any{"to": req.To, "timestamp": req.Timestamp, "queues": req.Queues, "offsets": offsetsOf(after)})
	return after, nil
}

// offsetsOf maps queue id to committed offset, for the audit log.
func offsetsOf(ps []store.CursorPosition) map[int64]int64 {
	out := make(map[int64]int64, len(ps))
	for _, p := range ps {
		out[p.QueueID] = p.Offset
	}
	return out
}
