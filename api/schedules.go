package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// upcomingTicks is how many next run times a schedule's view lists.
const upcomingTicks = 5

// ScheduleDTO is a schedule as the admin API shows it: the message each tick
// publishes (Body as JSON when its content type is JSON, else BodyBase64), State
// (active or paused), NextRuns (its next ticks, RFC 3339 UTC; empty while paused),
// LastRunAt (the tick last published; absent before the first) and Runs (messages
// published).
type ScheduleDTO struct {
	ID          int64             `json:"id"`
	Name        string            `json:"name"`
	Topic       string            `json:"topic"`
	Cron        string            `json:"cron"`
	Timezone    string            `json:"timezone"`
	State       string            `json:"state"`
	Tag         string            `json:"tag"`
	Key         string            `json:"key"`
	ContentType string            `json:"content_type"`
	Headers     map[string]string `json:"headers"`
	Body        json.RawMessage   `json:"body,omitempty"`
	BodyBase64  *string           `json:"body_base64,omitempty"`
	NextRuns    []string          `json:"next_runs"`
	LastRunAt   *string           `json:"last_run_at,omitempty"`
	Runs        int64             `json:"runs"`
	CreatedBy   string            `json:"created_by"`
	CreatedAt   string            `json:"created_at"`
}

func scheduleDTO(sc *models.Schedule) ScheduleDTO {
	d := messageDTO(&sc.Message, sc.Topic)
	out := ScheduleDTO{ID: sc.ID, Name: sc.Name, Topic: sc.Topic, Cron: sc.Cron, Timezone: sc.Timezone, State: "active",
		Tag: d.Tag, Key: d.Key, ContentType: d.ContentType, Headers: d.Headers, Body: d.Body, BodyBase64: d.BodyBase64,
		NextRuns: []string{}, Runs: sc.Runs, CreatedBy: sc.CreatedBy, CreatedAt: sc.CreatedAt.UTC().Format(control.TimeFormat)}
	if sc.Paused {
		out.State = "paused"
	}
	for _, t := range control.ScheduleUpcoming(sc, upcomingTicks) {
		out.NextRuns = append(out.NextRuns, t.UTC().Format(control.TimeFormat))
	}
	if !sc.LastRun.IsZero() {
		at := sc.LastRun.UTC().Format(control.TimeFormat)
		out.LastRunAt = &at
	}
	return out
}

// scheduleCreateRequest is POST /api/v1/schedules: the schedule and the message
// each tick publishes, spelled as in a publish (body or body_base64).
type scheduleCreateRequest struct {
	Name        string            `json:"name"`
	Topic       string            `json:"topic"`
	Cron        string            `json:"cron"`
	Timezone    string            `json:"timezone"`
	Body        json.RawMessage   `json:"body"`
	BodyBase64  *string           `json:"body_base64"`
	ContentType string            `json:"content_type"`
	Tag         string            `json:"tag"`
	Key         string            `json:"key"`
	Headers     map[string]string `json:"headers"`
	Paused      bool              `json:"paused"`
}

func (s *Server) scheduleCreate(c echo.Context) error {
	var req scheduleCreateRequest
	if err := bodyOf(c, MaxMessageBytes*2, &req); err != nil {
		return err
	}
	spec, err := req.spec()
	if err != nil {
		return err
	}
	sc, err := s.ctl.CreateSchedule(c.Request().Context(), actor(c), spec)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, scheduleDTO(sc))
}

// spec is the request as control takes it, its body decoded (a 422 for bad
// base64 or both body forms).
func (req scheduleCreateRequest) spec() (control.ScheduleSpec, error) {
	if string(req.Body) == "null" {
		req.Body = nil // as absent
	}
	msg := models.Message{Tag: req.Tag, Key: req.Key, ContentType: req.ContentType}
	switch {
	case len(req.Body) > 0 && req.BodyBase64 != nil:
		return control.ScheduleSpec{}, invalidField("/body", "give body or body_base64, not both")
	case len(req.Body) > 0:
		msg.Body = req.Body
	case req.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*req.BodyBase64)
		if err != nil {
			return control.ScheduleSpec{}, invalidField("/body_base64", "not valid base64 (standard alphabet, padded)")
		}
		msg.Body = b
		if msg.ContentType == "" {
			msg.ContentType = "application/octet-stream"
		}
	}
	return control.ScheduleSpec{Name: req.Name, Topic: req.Topic, Cron: req.Cron, Timezone: req.Timezone, Message: msg,
		Headers: req.Headers, Paused: req.Paused}, nil
}

// invalidField is a 422 naming one field.
func invalidField(pointer, detail string) error {
	return &models.ValidationError{Errors: []models.FieldError{{Pointer: pointer, Detail: detail}}}
}

// scheduleUpdate answers PATCH /api/v1/schedules/{schedule}: a JSON merge patch
// (RFC 7386) of the schedule as created (topic, cron, timezone, body or
// body_base64, content_type, tag, key, headers; the body and the headers are
// replaced whole). The name cannot change, and pause and resume are their own
// actions (422 for either in the patch).
func (s *Server) scheduleUpdate(c echo.Context) error {
	body, err := readBody(c, MaxMessageBytes*2)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	sc, err := s.ctl.GetSchedule(ctx, c.Param("schedule"))
	if err != nil {
		return err
	}
	var raw any
	if err := decodeStrict(body, &raw); err != nil {
		return err
	}
	patch, ok := raw.(map[string]any)
	if !ok {
		return invalidField("", "a merge patch of a schedule is a JSON object of the members to change")
	}
	if n, ok := patch["name"]; ok && n != sc.Name {
		return invalidField("/name", "a schedule's name cannot change; create another and delete this one")
	}
	if _, ok := patch["paused"]; ok {
		return invalidField("/paused", "pause and resume a schedule with POST …/pause and …/resume")
	}
	// A new body replaces the stored one whole, in either form; a body changing form
	// without a content_type takes that form's default, as a publish would.
	cur := scheduleDTO(sc)
	_, typed := patch["content_type"]
	switch {
	case patch["body"] != nil:
		patch["body_base64"] = nil
		if cur.BodyBase64 != nil && !typed {
			patch["content_type"] = nil
		}
	case patch["body_base64"] != nil:
		patch["body"] = nil
		if cur.BodyBase64 == nil && !typed {
			patch["content_type"] = nil
		}
	}
	doc := map[string]any{"name": sc.Name, "topic": sc.Topic, "cron": sc.Cron, "timezone": sc.Timezone, "content_type": sc.Message.ContentType,
		"tag": sc.Message.Tag, "key": sc.Message.Key, "headers": cur.Headers}
	if cur.BodyBase64 != nil {
		doc["body_base64"] = *cur.BodyBase64
	} else {
		doc["body"] = cur.Body
	}
	merged, err := json.Marshal(mergePatch(doc, patch))
	if err != nil {
		return err
	}
	var req scheduleCreateRequest
	if err := decodeStrict(merged, &req); err != nil {
		return err
	}
	spec, err := req.spec()
	if err != nil {
		return err
	}
	up, err := s.ctl.UpdateSchedule(ctx, actor(c), sc.Name, spec)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, scheduleDTO(up))
}

func (s *Server) scheduleList(c echo.Context) error {
	p, err := listPage(c)
	if err != nil {
		return err
	}
	page, err := s.ctl.ListSchedules(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listOf(page, scheduleDTO))
}

func (s *Server) scheduleGet(c echo.Context) error {
	sc, err := s.ctl.GetSchedule(c.Request().Context(), c.Param("schedule"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, scheduleDTO(sc))
}

func (s *Server) schedulePause(c echo.Context) error {
	sc, err := s.ctl.PauseSchedule(c.Request().Context(), actor(c), c.Param("schedule"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, scheduleDTO(sc))
}

func (s *Server) scheduleResume(c echo.Context) error {
	sc, err := s.ctl.ResumeSchedule(c.Request().Context(), actor(c), c.Param("schedule"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, scheduleDTO(sc))
}

func (s *Server) scheduleDelete(c echo.Context) error {
	if err := s.ctl.DeleteSchedule(c.Request().Context(), actor(c), c.Param("schedule")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
