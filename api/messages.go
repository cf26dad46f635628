package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
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

func messageSummaryDTO(m store.MessageSummary) MessageSummaryDTO {
	return MessageSummaryDTO{ID: models.MessageID(m.QueueID, m.Offset), Queue: m.QueueID, Offset: m.Offset, Tag: m.Tag, Key: m.Key,
		ContentType: m.ContentType, BodyBytes: m.BodyBytes, PublishedAt: msTime(m.CreatedAt)}
}

func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format(timeFormat) }

// messageQuery is a parsed browse request.
type messageQuery struct {
	filter store.MessageFilter
	limit  int
}

// parseMessageQuery reads ?key=&tag=&from=&to= (RFC 3339), ?limit= and ?cursor=.
func parseMessageQuery(c echo.Context) (messageQuery, error) {
	q := messageQuery{limit: 50}
	var v models.ValidationError
	q.filter.Key, q.filter.Tag = c.QueryParam("key"), c.QueryParam("tag")
	if !models.ValidLabel(q.filter.Key) {
		v.Add("/key", "keys are UTF-8 without control characters, at most 255 bytes")
	}
	if !models.ValidLabel(q.filter.Tag) {
		v.Add("/tag", "tags are UTF-8 without control characters, at most 255 bytes")
	}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"from", &q.filter.FromMS}, {"to", &q.filter.ToMS}} {
		if s := c.QueryParam(p.name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				v.Add("/"+p.name, "must be an RFC 3339 time")
				continue
			}
			*p.dst = t.UnixMilli()
		}
	}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			v.Add("/limit", "must be between 1 and 500")
		}
		q.limit = n
	}
	if s := c.QueryParam("cursor"); s != "" {
		pos, err := decodeMessageCursor(s)
		if err != nil {
			v.Add("/cursor", "is not one this API returned")
		}
		q.filter.Before = pos
	}
	return q, v.Err()
}

func encodeMessageCursor(m store.MessageSummary) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d.%d.%d", m.CreatedAt, m.QueueID, m.Offset))
}

func decodeMessageCursor(s string) (*store.MessagePosition, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(string(b), ".")
	if len(parts) != 3 {
		return nil, models.ErrInvalid
	}
	var n [3]int64
	for i, p := range parts {
		if n[i], err = strconv.ParseInt(p, 10, 64); err != nil {
			return nil, err
		}
	}
	return &store.MessagePosition{CreatedAtMS: n[0], Queue: n[1], Offset: n[2]}, nil
}

// browseMessages runs a browse of topic name; shared by the API and the console.
func (s *Server) browseMessages(ctx context.Context, name string, q messageQuery) (*models.Topic, listResponse[MessageSummaryDTO], error) {
	out := listResponse[MessageSummaryDTO]{Items: []MessageSummaryDTO{}}
	t, err := s.st.TopicGetByName(ctx, name)
	if err != nil {
		return nil, out, err
	}
	ms, err := s.st.MessagesBrowse(ctx, t, q.filter, q.limit)
	if err != nil {
		return nil, out, err
	}
	for _, m := range ms {
		out.Items = append(out.Items, messageSummaryDTO(m))
	}
	if len(ms) == q.limit {
		out.NextCursor = encodeMessageCursor(ms[len(ms)-1])
	}
	return t, out, nil
}

func (s *Server) messageList(c echo.Context) error {
	q, err := parseMessageQuery(c)
	if err != nil {
		return err
	}
	_, out, err := s.browseMessages(c.Request().Context(), c.Param("topic"), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
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
// delivery attempt of it, for every group, oldest first. Extend it here and fill the
// field in messageDetail; the console's message page renders the same value.
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

// messageDetail loads a message by its public id with its delivery information.
func (s *Server) messageDetail(ctx context.Context, id string) (*MessageDetailDTO, error) {
	m, topic, err := s.st.MessageGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	as, err := s.st.AttemptsByMessage(ctx, m.QueueID, m.Offset)
	if err != nil {
		return nil, err
	}
	names := map[int64]string{}
	out := &MessageDetailDTO{MessageDTO: messageDTO(m, topic), DeliveryAttempts: []MessageAttemptDTO{}}
	for i, a := range AttemptDTOs(as) {
		gid := as[i].GroupID
		if _, ok := names[gid]; !ok {
			if g, err := s.st.GroupGetByID(ctx, gid); err == nil {
				names[gid] = g.Name
			}
		}
		out.DeliveryAttempts = append(out.DeliveryAttempts, MessageAttemptDTO{Group: names[gid], DeliveryAttemptDTO: a})
	}
	return out, nil
}

func (s *Server) messageGet(c echo.Context) error {
	d, err := s.messageDetail(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}
