package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// MessageSummaryDTO is a browsed message without its body; BodyBytes is its size.
type MessageSummaryDTO struct {
	ID          string `json:"id"`
	Queue       int64  `json:"queue"`
	Offset      int64  `json:"offset"`
	Tag         string `json:"tag"`
	Key         string `json:"key"`
	ContentType string `json:"content_type"`
	BodyBytes   int64  `json:"body_bytes"`
	PublishedAt string `json:"published_at"`
}

func messageSummaryDTO(m control.MessageSummary) MessageSummaryDTO {
	return MessageSummaryDTO{ID: models.MessageID(m.QueueID, m.Offset), Queue: m.QueueID, Offset: m.Offset, Tag: m.Tag, Key: m.Key,
		ContentType: m.ContentType, BodyBytes: m.BodyBytes, PublishedAt: msTime(m.CreatedAt)}
}

func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format(control.TimeFormat) }

func (s *Server) messageList(c echo.Context) error {
	q, err := control.ParseMessageQuery(control.MessageQueryParams{Key: c.QueryParam("key"), Tag: c.QueryParam("tag"),
		From: c.QueryParam("from"), To: c.QueryParam("to"), Limit: c.QueryParam("limit"), Cursor: c.QueryParam("cursor")})
	if err != nil {
		return err
	}
	page, err := s.ctl.BrowseMessages(c.Request().Context(), c.Param("topic"), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listOf(page, messageSummaryDTO))
}

// MessageDTO is one message with its body: Body holds a JSON body as published
// (content type application/json or +json and valid JSON), BodyBase64 anything else.
type MessageDTO struct {
	MessageSummaryDTO
	Topic      string            `json:"topic"`
	Headers    map[string]string `json:"headers"`
	TraceID    string            `json:"trace_id"`
	Body       json.RawMessage   `json:"body,omitempty"`
	BodyBase64 *string           `json:"body_base64,omitempty"`
}

// MessageDetailDTO is GET /api/v1/messages/{id}: the message and every recorded
// delivery attempt of it, for every group, oldest first.
type MessageDetailDTO struct {
	MessageDTO
	DeliveryAttempts []MessageAttemptDTO `json:"delivery_attempts"`
}

// MessageAttemptDTO is one delivery attempt of a message, naming its group.
type MessageAttemptDTO struct {
	Group string `json:"group"`
	DeliveryAttemptDTO
}

func messageDTO(m *models.Message, topic string) MessageDTO {
	d := MessageDTO{MessageSummaryDTO: MessageSummaryDTO{ID: models.MessageID(m.QueueID, m.Offset), Queue: m.QueueID, Offset: m.Offset,
		Tag: m.Tag, Key: m.Key, ContentType: m.ContentType, BodyBytes: int64(len(m.Body)), PublishedAt: msTime(m.CreatedAt)},
		Topic: topic, Headers: m.Headers, TraceID: m.TraceID}
	if d.Headers == nil {
		d.Headers = map[string]string{}
	}
	ct := strings.ToLower(m.ContentType)
	if (strings.HasPrefix(ct, "application/json") || strings.Contains(ct, "+json")) && json.Valid(m.Body) {
		d.Body = m.Body
	} else {
		b := base64.StdEncoding.EncodeToString(m.Body)
		d.BodyBase64 = &b
	}
	return d
}

func (s *Server) messageGet(c echo.Context) error {
	if id := c.Param("id"); models.IsDelayedID(id) {
		return s.delayedGet(c, id)
	}
	if id := c.Param("id"); models.IsBatchID(id) {
		d, err := s.batchDetail(c.Request().Context(), id)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, d)
	}
	m, err := s.ctl.GetMessage(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	out := MessageDetailDTO{MessageDTO: messageDTO(m.Message, m.Topic), DeliveryAttempts: []MessageAttemptDTO{}}
	for _, a := range m.Attempts {
		out.DeliveryAttempts = append(out.DeliveryAttempts, MessageAttemptDTO{Group: m.GroupNames[a.GroupID], DeliveryAttemptDTO: attemptDTO(a)})
	}
	return c.JSON(http.StatusOK, out)
}
