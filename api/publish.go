package api

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/internal/stagetrace"
	"github.com/heraldhq/herald/models"
)

// Publish limits: per message, per request and per header set; larger requests answer 413.
const (
	MaxRequestBytes     = 5 << 20
	MaxMessageBytes     = models.MaxMessageBytes
	MaxMessagesPerReq   = 500
	MaxHeadersPerMsg    = models.MaxHeadersPerMessage
	MaxHeaderValueBytes = models.MaxHeaderValueBytes
)

// publishMessage is one message of a publish request.
type publishMessage struct {
	Body        json.RawMessage   `json:"body"`
	BodyBase64  *string           `json:"body_base64"`
	ContentType string            `json:"content_type"`
	Key         string            `json:"key"`
	Tag         string            `json:"tag"`
	Headers     map[string]string `json:"headers"`
	// DelaySeconds (1 … 31,536,000) or DeliverAt (RFC 3339; a past time means
	// now) park the message until then (models.DeliverAt).
	DelaySeconds *int64  `json:"delay_seconds"`
	DeliverAt    *string `json:"deliver_at"`
}

type publishRequest struct {
	Messages []publishMessage `json:"messages"`
}

// publishedMessage is one stored message in a publish's answer: its id, queue and
// offset, or for a delayed message its dly_ id and due time (its queue and offset
// are chosen when it is due).
type publishedMessage struct {
	ID        string  `json:"id"`
	Queue     int64   `json:"queue,omitempty"`
	Offset    int64   `json:"offset,omitempty"`
	DeliverAt *string `json:"deliver_at,omitempty"`
}

type publishResponse struct {
	Messages []publishedMessage `json:"messages"`
}

// readBody reads a JSON request body of at most limit bytes (after gzip, if any).
func readBody(c echo.Context, limit int64) ([]byte, error) {
	req := c.Request()
	ct := req.Header.Get(echo.HeaderContentType)
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && (mt != "application/merge-patch+json" || req.Method != http.MethodPatch)) {
		return nil, problem(ProblemUnsupportedMediaType, "Content-Type must be application/json (or application/merge-patch+json for PATCH)")
	}
	r := io.Reader(http.MaxBytesReader(c.Response(), req.Body, limit))
	switch strings.ToLower(req.Header.Get("Content-Encoding")) {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, problem(ProblemMalformedRequest, "gzip: "+err.Error())
		}
		defer zr.Close()
		r = io.LimitReader(zr, limit+1) // a gzip bomb stops at the limit
	default:
		return nil, problem(ProblemUnsupportedMediaType, "Content-Encoding must be gzip or identity")
	}
	body, err := io.ReadAll(r)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || int64(len(body)) > limit {
		return nil, problem(ProblemPayloadTooLarge, fmt.Sprintf("requests are limited to %d bytes", limit))
	}
	if err != nil {
		return nil, problem(ProblemMalformedRequest, "read body: "+err.Error())
	}
	return body, nil
}

// decodeStrict decodes body into v, refusing unknown fields, trailing data and
// text that is not UTF-8, raw or as lone surrogate escapes (refuseInvalidText: 422
// validation naming the first bad member by JSON pointer).
func decodeStrict(body []byte, v any) error {
	if err := refuseInvalidText(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			return problem(ProblemUnknownField, strings.TrimPrefix(err.Error(), "json: "))
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "" {
			p := problem(ProblemValidation, "the body must be a JSON object")
			p.Errors = []models.FieldError{{Pointer: "", Detail: "must be a JSON object"}}
			return p
		}
		if errors.As(err, &te) {
			p := problem(ProblemValidation, fmt.Sprintf("%s must be %s", te.Field, te.Type))
			p.Errors = []models.FieldError{{Pointer: "/" + strings.ReplaceAll(te.Field, ".", "/"), Detail: "must be " + te.Type.String()}}
			return p
		}
		if errors.Is(err, io.EOF) {
			return problem(ProblemMalformedRequest, "the body is empty; a JSON object is required")
		}
		return problem(ProblemMalformedRequest, err.Error())
	}
	if dec.More() {
		return problem(ProblemMalformedRequest, "trailing data after the JSON value")
	}
	return nil
}

// publish stores a request's messages, all or none, and answers 201 with their ids.
func (s *Server) publish(c echo.Context) error {
	traceStart := stagetrace.Now()
	ctx := c.Request().Context()
	name := c.Param("topic")
	key := apiKeyFrom(c)
	if !models.ValidName(name) || models.ReservedName(name) {
		if models.ReservedName(name) {
			return problem(ProblemForbidden, "dead-letter topics are written by Herald only")
		}
		return problem(ProblemTopicNotFound, "no topic named "+strconv.Quote(name))
	}
	if !key.Allows(name) {
		return problem(ProblemForbidden, "this API key may not publish to "+name)
	}
	topic, err := s.topic(ctx, name)
	if errors.Is(err, models.ErrNotFound) {
		return problem(ProblemTopicNotFound, "no topic named "+name)
	} else if err != nil {
		return err
	}
	body, err := readBody(c, MaxRequestBytes)
	if err != nil {
		return err
	}
	idemKey := c.Request().Header.Get("Idempotency-Key")
	var reqHash []byte
	if idemKey != "" {
		if !models.ValidLabel(idemKey) {
			return problem(ProblemValidation, "Idempotency-Key must be 1 to 255 bytes of UTF-8 without control characters")
		}
		sum := sha256.Sum256(body)
		reqHash = sum[:]
		if rec, err := s.writer.IdempotencyGet(ctx, key.ID, topic.ID, idemKey); err == nil {
			return replay(c, rec, reqHash)
		} else if !errors.Is(err, models.ErrNotFound) {
			return err
		}
	}
	var req publishRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	due, err := delaysOf(req.Messages, time.Now())
	if err != nil {
		return err
	}
	if due != nil {
		msgs, err := s.buildMessages(c, topic, false, false, req.Messages)
		if err != nil {
			return err
		}
		var idem *groupcommit.IdempotencyRecord
		if idemKey != "" {
			idem = &groupcommit.IdempotencyRecord{APIKeyID: key.ID, TopicID: topic.ID, Key: idemKey, RequestHash: reqHash}
		}
		return s.publishDelayed(c, topic, msgs, due, idem)
	}
	var pr *groupcommit.PublishRequest
	var msgs []models.Message
	var traceSubmit time.Time
	for try := 0; ; try++ {
		spread := writable(topic)
		msgs, err = s.buildMessages(c, topic, len(spread) > 0, true, req.Messages)
		if err != nil {
			return err
		}
		pr = &groupcommit.PublishRequest{Messages: msgs, TopicID: topic.ID, Spread: spread, Respond: respond}
		if idemKey != "" {
			pr.Idempotency = &groupcommit.IdempotencyRecord{APIKeyID: key.ID, TopicID: topic.ID, Key: idemKey, RequestHash: reqHash}
		}
		traceSubmit = stagetrace.Now()
		err = s.writer.Submit(ctx, pr)
		if try > 0 || !errors.Is(err, models.ErrQueueSealed) {
			break
		}
		// A move sealed a queue after this copy of the topic was read: nothing was
		// stored, so the request goes again, once, on the topic as it is now.
		s.topics.Drop(name)
		if topic, err = s.topic(ctx, name); err != nil {
			return s.publishFailed(ctx, name, idemKey != "", err)
		}
	}
	if err != nil {
		if idemKey != "" && errors.Is(err, models.ErrConflict) {
			// A concurrent request with the same key won the race: answer as it did.
			if rec, gerr := s.writer.IdempotencyGet(ctx, key.ID, topic.ID, idemKey); gerr == nil {
				return replay(c, rec, reqHash)
			}
		}
		return s.publishFailed(ctx, name, idemKey != "", err)
	}
	s.series.published(name, len(msgs))
	s.stats.addPublished(topic.ID, len(msgs))
	status, out := respond(pr.Messages)
	if stagetrace.Enabled() {
		answered := time.Now()
		for _, m := range pr.Messages {
			stagetrace.Mark(stagetrace.PublishStart, traceStart, m.QueueID, m.Offset)
			stagetrace.Mark(stagetrace.PublishSubmit, traceSubmit, m.QueueID, m.Offset)
			stagetrace.Mark(stagetrace.PublishAnswered, answered, m.QueueID, m.Offset)
		}
	}
	return c.JSONBlob(status, out)
}

func respond(msgs []models.Message) (int, []byte) {
	resp := publishResponse{Messages: make([]publishedMessage, len(msgs))}
	for i, m := range msgs {
		resp.Messages[i] = publishedMessage{ID: models.MessageID(m.QueueID, m.Offset), Queue: m.QueueID, Offset: m.Offset}
	}
	b, _ := json.Marshal(resp)
	return http.StatusCreated, b
}

func replay(c echo.Context, rec *groupcommit.IdempotencyRecord, reqHash []byte) error {
	if !bytes.Equal(rec.RequestHash, reqHash) {
		return problem(ProblemIdempotencyMismatch, "this Idempotency-Key was used with a different body in the last 24 h")
	}
	c.Response().Header().Set("Idempotent-Replayed", "true")
	return c.JSONBlob(rec.Status, rec.Response)
}

// buildMessages validates every message and, when route is set, routes keyed
// messages to their key's slot (never failing over, so per-key order holds) and
// fails when the topic has no writable queue. Keyless ones keep QueueID 0: the
// group-commit writer puts every keyless message of a flush into one writable queue
// (groupcommit.Writer.assign); anyWritable says whether the topic has one. Delayed
// messages are routed when due (route false).
func (s *Server) buildMessages(c echo.Context, topic *models.Topic, anyWritable, route bool, in []publishMessage) ([]models.Message, error) {
	var v models.ValidationError
	if len(in) == 0 {
		v.Add("/messages", "at least one message is required")
		return nil, v.Err()
	}
	if len(in) > MaxMessagesPerReq {
		return nil, problem(ProblemPayloadTooLarge, fmt.Sprintf("at most %d messages per request", MaxMessagesPerReq))
	}
	now := time.Now().UnixMilli()
	traceID := traceIDFrom(c.Request().Header.Get("traceparent"))
	ip := c.RealIP()
	out := make([]models.Message, len(in))
	for i, m := range in {
		p := "/messages/" + strconv.Itoa(i)
		msg := models.Message{Tag: m.Tag, Key: m.Key, ContentType: m.ContentType, CreatedAt: now, TraceID: traceID, ProducerIP: ip}
		switch {
		case len(m.Body) > 0 && m.BodyBase64 != nil:
			v.Add(p, "give body or body_base64, not both")
		case len(m.Body) > 0:
			msg.Body = m.Body
			if msg.ContentType == "" {
				msg.ContentType = "application/json"
			}
		case m.BodyBase64 != nil:
			b, err := base64.StdEncoding.DecodeString(*m.BodyBase64)
			if err != nil {
				v.Add(p+"/body_base64", "not valid base64 (standard alphabet, padded)")
			}
			msg.Body = b
			if msg.ContentType == "" {
				msg.ContentType = "application/octet-stream"
			}
		default:
			v.Add(p+"/body", "body or body_base64 is required")
		}
		if len(msg.Body) > MaxMessageBytes {
			return nil, problem(ProblemPayloadTooLarge, fmt.Sprintf("%s is %d bytes; messages are limited to %d", p, len(msg.Body), MaxMessageBytes))
		}
		models.CheckMessageFields(p, &msg, m.Headers, &v)
		if !route {
			out[i] = msg
			continue
		}
		if m.Key == "" && !anyWritable {
			return nil, fmt.Errorf("topic %s: every queue is read-only: %w", topic.Name, models.ErrQueueUnavailable)
		}
		if m.Key != "" {
			q, ok := topic.QueueForKey(m.Key)
			if !ok || q.State != models.QueueReadWrite {
				return nil, fmt.Errorf("key %q: %w", m.Key, models.ErrQueueUnavailable)
			}
			msg.QueueID = q.ID
		}
		out[i] = msg
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// writable lists the ids of t's queues that accept writes, in queue order.
func writable(t *models.Topic) []int64 {
	var out []int64
	for _, q := range t.Queues {
		if q.State == models.QueueReadWrite {
			out = append(out, q.ID)
		}
	}
	return out
}

// traceIDFrom takes the trace id from a W3C traceparent header, or "".
func traceIDFrom(tp string) string {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || len(parts[1]) != 32 {
		return ""
	}
	for _, c := range parts[1] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return parts[1]
}
