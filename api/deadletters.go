package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// DeadLetterDTO is a dead letter as the admin API shows it. DLQOffset is the offset
// of its copy on the group's dead-letter topic `<group>.dlq` (null until appended; 0
// when not appended because the message came through a dead-letter topic).
type DeadLetterDTO struct {
	ID         int64                `json:"id"`
	MessageID  string               `json:"message_id"`
	Queue      int64                `json:"queue"`
	Offset     int64                `json:"offset"`
	Attempts   int                  `json:"attempts"`
	LastStatus int                  `json:"last_status"`
	LastError  string               `json:"last_error"`
	State      string               `json:"state"`
	DLQTopic   string               `json:"dlq_topic"`
	DLQOffset  *int64               `json:"dlq_offset"`
	CreatedAt  string               `json:"created_at"`
	UpdatedAt  string               `json:"updated_at"`
	Delivery   []DeliveryAttemptDTO `json:"delivery_attempts,omitempty"`
}

// DeliveryAttemptDTO is one recorded POST of a message: status (0 when none),
// error_class for failures, latency_ms, and the start of a failed response body.
type DeliveryAttemptDTO struct {
	WebhookID       string `json:"webhook_id"`
	Attempt         int    `json:"attempt"`
	Status          int    `json:"status"`
	ErrorClass      string `json:"error_class"`
	LatencyMS       int    `json:"latency_ms"`
	ResponseExcerpt string `json:"response_excerpt"`
	At              string `json:"at"`
}

func attemptDTO(a models.DeliveryAttempt) DeliveryAttemptDTO {
	return DeliveryAttemptDTO{WebhookID: a.WebhookID, Attempt: a.Attempt, Status: a.Status, ErrorClass: a.ErrorClass,
		LatencyMS: a.LatencyMS, ResponseExcerpt: string(a.Excerpt), At: a.CreatedAt.UTC().Format(control.TimeFormat)}
}

func deadLetterDTO(g *models.Group, d models.DeadLetter) DeadLetterDTO {
	return DeadLetterDTO{ID: d.ID, MessageID: models.MessageID(d.QueueID, d.Offset), Queue: d.QueueID, Offset: d.Offset,
		Attempts: d.Attempts, LastStatus: d.LastStatus, LastError: d.LastError, State: string(d.State),
		DLQTopic: g.Name + models.DeadLetterSuffix, DLQOffset: d.DLQOffset,
		CreatedAt: d.CreatedAt.UTC().Format(control.TimeFormat), UpdatedAt: d.UpdatedAt.UTC().Format(control.TimeFormat)}
}

func (s *Server) deadLetterList(c echo.Context) error {
	p, err := listPage(c)
	if err != nil {
		return err
	}
	g, page, err := s.ctl.ListDeadLetters(c.Request().Context(), c.Param("group"), models.DeadLetterState(c.QueryParam("state")), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listOf(page, func(d models.DeadLetter) DeadLetterDTO { return deadLetterDTO(g, d) }))
}

func (s *Server) deadLetterGet(c echo.Context) error {
	id, err := control.ParseID(c.Param("id"), "dead letter")
	if err != nil {
		return err
	}
	d, err := s.ctl.GetDeadLetter(c.Request().Context(), c.Param("group"), id)
	if err != nil {
		return err
	}
	dto := deadLetterDTO(d.Group, *d.Letter)
	dto.Delivery = make([]DeliveryAttemptDTO, 0, len(d.Attempts))
	for _, a := range d.Attempts {
		dto.Delivery = append(dto.Delivery, attemptDTO(a))
	}
	return c.JSON(http.StatusOK, dto)
}

// deadLetterSelection picks dead letters by ids and/or a created_at range
// [from, to) (RFC 3339); an empty body selects every pending one.
type deadLetterSelection struct {
	IDs  []int64 `json:"ids"`
	From string  `json:"from"`
	To   string  `json:"to"`
}

func deadLetterSelectionOf(c echo.Context) (control.DeadLetterSelection, error) {
	var sel control.DeadLetterSelection
	var req deadLetterSelection
	if c.Request().ContentLength != 0 {
		body, err := readBody(c, 1<<20)
		if err != nil {
			return sel, err
		}
		if len(body) > 0 {
			if err := decodeStrict(body, &req); err != nil {
				return sel, err
			}
		}
	}
	var v models.ValidationError
	sel.IDs = req.IDs
	for _, p := range []struct {
		raw string
		dst *time.Time
		ptr string
	}{{req.From, &sel.From, "/from"}, {req.To, &sel.To, "/to"}} {
		if p.raw == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, p.raw)
		if err != nil {
			v.Add(p.ptr, "must be an RFC 3339 time")
		}
		*p.dst = t
	}
	return sel, v.Err()
}

func (s *Server) deadLetterRedrive(c echo.Context) error {
	sel, err := deadLetterSelectionOf(c)
	if err != nil {
		return err
	}
	n, err := s.ctl.RedriveDeadLetters(c.Request().Context(), actor(c), c.Param("group"), sel)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]int64{"redriven": n})
}

func (s *Server) deadLetterPurge(c echo.Context) error {
	sel, err := deadLetterSelectionOf(c)
	if err != nil {
		return err
	}
	n, err := s.ctl.PurgeDeadLetters(c.Request().Context(), actor(c), c.Param("group"), sel)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]int64{"purged": n})
}
