package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/models"
)

// DelayedMessageDTO is GET /api/v1/messages/{id} for a delayed message that waits
// for its time: the message as published (its queue and offset are chosen when it
// is due), its due time and State "waiting".
type DelayedMessageDTO struct {
	ID          string            `json:"id"`
	State       string            `json:"state"`
	DeliverAt   string            `json:"deliver_at"`
	Topic       string            `json:"topic"`
	Tag         string            `json:"tag"`
	Key         string            `json:"key"`
	ContentType string            `json:"content_type"`
	BodyBytes   int64             `json:"body_bytes"`
	PublishedAt string            `json:"published_at"`
	Headers     map[string]string `json:"headers"`
	TraceID     string            `json:"trace_id"`
	Body        json.RawMessage   `json:"body,omitempty"`
	BodyBase64  *string           `json:"body_base64,omitempty"`
}

// delaysOf returns each message's due time when the request's messages are
// delayed (delay_seconds or deliver_at), nil when none is. A request mixing
// delayed and immediate messages, or a bad value, is a 422 naming the field.
func delaysOf(in []publishMessage, now time.Time) ([]time.Time, error) {
	var v models.ValidationError
	var due []time.Time
	plain := 0
	for i, m := range in {
		at, ok, field, msg := models.DeliverAt(m.DelaySeconds, m.DeliverAt, now)
		p := "/messages/" + strconv.Itoa(i)
		switch {
		case field != "":
			v.Add(p+field, msg)
		case ok:
			due = append(due, at)
		default:
			plain++
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if len(due) > 0 && plain > 0 {
		v.Add("/messages", "a request's messages are either all delayed (delay_seconds or deliver_at) or none is")
		return nil, v.Err()
	}
	return due, nil
}

// publishDelayed parks msgs (built from a request whose messages are all delayed,
// each due at due[i]) until their time and answers 201 with their dly_ ids and due
// times; with an Idempotency-Key the answer is stored with them.
func (s *Server) publishDelayed(c echo.Context, topic *models.Topic, msgs []models.Message, due []time.Time, idem *groupcommit.IdempotencyRecord) error {
	ctx := c.Request().Context()
	parked := make([]models.DelayedMessage, len(msgs))
	for i, m := range msgs {
		m.QueueID = 0 // routed when due, on the topic as it is then
		parked[i] = models.DelayedMessage{TopicID: topic.ID, DeliverAt: due[i].UTC(), Message: m}
	}
	if err := s.ctl.ParkMessages(ctx, parked, idem, respondDelayed); err != nil {
		if idem != nil && errors.Is(err, models.ErrConflict) {
			if rec, gerr := s.writer.IdempotencyGet(ctx, idem.APIKeyID, topic.ID, idem.Key); gerr == nil {
				return replay(c, rec, idem.RequestHash)
			}
		}
		return s.publishFailed(ctx, topic.Name, idem != nil, err)
	}
	s.series.published(topic.Name, len(msgs))
	s.stats.addPublished(topic.ID, len(msgs))
	status, out := respondDelayed(parked)
	return c.JSONBlob(status, out)
}

// respondDelayed is the 201 answer to a publish of parked messages.
func respondDelayed(ms []models.DelayedMessage) (int, []byte) {
	resp := publishResponse{Messages: make([]publishedMessage, len(ms))}
	for i, m := range ms {
		at := m.DeliverAt.UTC().Format(control.TimeFormat)
		resp.Messages[i] = publishedMessage{ID: models.DelayedID(m.ID), DeliverAt: &at}
	}
	b, _ := json.Marshal(resp)
	return http.StatusCreated, b
}

// delayedGet answers GET /api/v1/messages/dly_…: the delayed message while it
// waits; 404 once it was moved into its topic (then it has a msg_ id) or cancelled.
func (s *Server) delayedGet(c echo.Context, id string) error {
	m, topic, err := s.ctl.GetDelayed(c.Request().Context(), id)
	if err != nil {
		if errors.Is(err, models.ErrNotFound) {
			return problem(ProblemNotFound, "no delayed message "+id+" waits: it was delivered into its topic at its time, or cancelled")
		}
		return err
	}
	d := messageDTO(&m.Message, topic)
	return c.JSON(http.StatusOK, DelayedMessageDTO{ID: id, State: "waiting", DeliverAt: m.DeliverAt.UTC().Format(control.TimeFormat), Topic: topic,
		Tag: d.Tag, Key: d.Key, ContentType: d.ContentType, BodyBytes: d.BodyBytes, PublishedAt: d.PublishedAt,
		Headers: d.Headers, TraceID: d.TraceID, Body: d.Body, BodyBase64: d.BodyBase64})
}

// messageCancel answers DELETE /api/v1/messages/{id}: a delayed message not yet
// due is deleted and never delivered (204).
func (s *Server) messageCancel(c echo.Context) error {
	id := c.Param("id")
	err := s.ctl.CancelDelayed(c.Request().Context(), actor(c), id)
	if errors.Is(err, models.ErrNotFound) {
		return problem(ProblemNotFound, "no delayed message "+id+" waits: it was delivered into its topic at its time, or cancelled")
	}
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
