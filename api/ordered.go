package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
)

// BlockedQueueDTO is a queue of an ordered group stopped on its head: Count messages
// from MessageID failed Attempts times; they are sent again at NextAttemptAt (RFC
// 3339), or, when Paused, when an operator resumes or skips the queue.
type BlockedQueueDTO struct {
	Queue         int64   `json:"queue"`
	MessageID     string  `json:"message_id"`
	Offset        int64   `json:"offset"`
	Count         int     `json:"count"`
	Attempts      int     `json:"attempts"`
	NextAttemptAt *string `json:"next_attempt_at"`
	Paused        bool    `json:"paused"`
	LastError     string  `json:"last_error"`
	Action        string  `json:"pending_action,omitempty"`
}

func blockedQueueDTO(b models.OrderedBlock) BlockedQueueDTO {
	d := BlockedQueueDTO{Queue: b.QueueID, MessageID: models.MessageID(b.QueueID, b.Offset), Offset: b.Offset, Count: b.Count,
		Attempts: b.Attempts, Paused: b.Paused, LastError: b.LastError, Action: b.Action}
	if !b.NextAt.IsZero() && !b.Paused {
		d.NextAttemptAt = fmtTime(&b.NextAt)
	}
	return d
}

func blockedQueueDTOs(bs []models.OrderedBlock) []BlockedQueueDTO {
	out := make([]BlockedQueueDTO, 0, len(bs))
	for _, b := range bs {
		out = append(out, blockedQueueDTO(b))
	}
	return out
}

func (s *Server) queueSkip(c echo.Context) error   { return s.queueAction(c, true) }
func (s *Server) queueResume(c echo.Context) error { return s.queueAction(c, false) }

// queueAction skips or resumes a blocked queue of an ordered group: 202, since the
// owning dispatcher applies it within a heartbeat.
func (s *Server) queueAction(c echo.Context, skip bool) error {
	q, err := strconv.ParseInt(c.Param("queue"), 10, 64)
	if err != nil || q <= 0 {
		return problem(ProblemNotFound, "no queue "+c.Param("queue"))
	}
	ctx := c.Request().Context()
	var b models.OrderedBlock
	if skip {
		b, err = s.ctl.SkipBlockedQueue(ctx, actor(c), c.Param("group"), q)
	} else {
		b, err = s.ctl.ResumeBlockedQueue(ctx, actor(c), c.Param("group"), q)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, blockedQueueDTO(b))
}

// BlockedKeyDTO is a key of a group ordered by key stopped on a failed POST: Count
// of its messages from MessageID failed Attempts times; they are sent again at
// NextAttemptAt (RFC 3339), or, when Paused, when an operator resumes or skips the
// key. Later messages of the key wait; other keys do not.
type BlockedKeyDTO struct {
	Queue         int64   `json:"queue"`
	Key           string  `json:"key"`
	MessageID     string  `json:"message_id"`
	Offset        int64   `json:"offset"`
	Count         int     `json:"count"`
	Attempts      int     `json:"attempts"`
	NextAttemptAt *string `json:"next_attempt_at"`
	Paused        bool    `json:"paused"`
	LastError     string  `json:"last_error"`
	Action        string  `json:"pending_action,omitempty"`
}

func blockedKeyDTOs(bs []models.OrderedKeyBlock) []BlockedKeyDTO {
	out := make([]BlockedKeyDTO, 0, len(bs))
	for _, b := range bs {
		d := BlockedKeyDTO{Queue: b.QueueID, Key: b.Key, MessageID: models.MessageID(b.QueueID, b.Offset), Offset: b.Offset, Count: b.Count,
			Attempts: b.Attempts, Paused: b.Paused, LastError: b.LastError, Action: b.Action}
		if !b.NextAt.IsZero() && !b.Paused {
			d.NextAttemptAt = fmtTime(&b.NextAt)
		}
		out = append(out, d)
	}
	return out
}

// keyActionRequest names a blocked key; Queue 0 (or absent) means every queue of
// the group where the key is blocked.
type keyActionRequest struct {
	Key   *string `json:"key"`
	Queue int64   `json:"queue"`
}

func (s *Server) keySkip(c echo.Context) error   { return s.keyAction(c, true) }
func (s *Server) keyResume(c echo.Context) error { return s.keyAction(c, false) }

// keyAction skips or resumes a blocked key of a group ordered by key: 202 with the
// blocked keys it applies to, since the owning dispatcher applies it within a
// heartbeat.
func (s *Server) keyAction(c echo.Context, skip bool) error {
	var req keyActionRequest
	if err := bodyOf(c, 4<<10, &req); err != nil {
		return err
	}
	if req.Key == nil || req.Queue < 0 {
		p := problem(ProblemValidation, "key is required; queue, when given, is a queue id")
		p.Errors = []models.FieldError{{Pointer: "/key", Detail: "required: the blocked key to act on"}}
		return p
	}
	ctx := c.Request().Context()
	var bs []models.OrderedKeyBlock
	var err error
	if skip {
		bs, err = s.ctl.SkipBlockedKey(ctx, actor(c), c.Param("group"), req.Queue, *req.Key)
	} else {
		bs, err = s.ctl.ResumeBlockedKey(ctx, actor(c), c.Param("group"), req.Queue, *req.Key)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"blocked_keys": blockedKeyDTOs(bs)})
}
