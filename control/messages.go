package control

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// MessageQuery is a parsed browse of a topic's messages, newest first.
type MessageQuery struct {
	Filter store.MessageFilter
	Limit  int
}

// MessageQueryParams are a browse's parameters as transports receive them: Key and
// Tag match exactly; From and To bound the publish time (RFC 3339, To exclusive);
// Limit is 1 to MaxLimit (empty: DefaultLimit); Cursor continues an earlier page.
type MessageQueryParams struct {
	Key, Tag, From, To, Limit, Cursor string
}

// ParseMessageQuery validates p. Errors are a *models.ValidationError naming each bad
// parameter (/key, /tag, /from, /to, /limit, /cursor).
func ParseMessageQuery(p MessageQueryParams) (MessageQuery, error) {
	q := MessageQuery{Limit: DefaultLimit}
	var v models.ValidationError
	q.Filter.Key, q.Filter.Tag = p.Key, p.Tag
	if !models.ValidLabel(q.Filter.Key) {
		v.Add("/key", "keys are UTF-8 without control characters, at most 255 bytes")
	}
	if !models.ValidLabel(q.Filter.Tag) {
		v.Add("/tag", "tags are UTF-8 without control characters, at most 255 bytes")
	}
	for _, b := range []struct {
		name, raw string
		dst       *int64
	}{{"from", p.From, &q.Filter.FromMS}, {"to", p.To, &q.Filter.ToMS}} {
		if b.raw != "" {
			t, err := time.Parse(time.RFC3339Nano, b.raw)
			if err != nil {
				v.Add("/"+b.name, "must be an RFC 3339 time")
				continue
			}
			*b.dst = t.UnixMilli()
		}
	}
	if p.Limit != "" {
		n, err := strconv.Atoi(p.Limit)
		if err != nil || n < 1 || n > MaxLimit {
			v.Add("/limit", fmt.Sprintf("must be between 1 and %d", MaxLimit))
		}
		q.Limit = n
	}
	if p.Cursor != "" {
		pos, err := decodeMessageCursor(p.Cursor)
		if err != nil {
			v.Add("/cursor", "is not one this API returned")
		}
		q.Filter.Before = pos
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

// BrowseMessages returns one page of topic name's messages (without bodies), newest
// first. Errors: models.ErrNotFound.
func (c *Control) BrowseMessages(ctx context.Context, name string, q MessageQuery) (Page[store.MessageSummary], error) {
	out := Page[store.MessageSummary]{Items: []store.MessageSummary{}}
	t, err := c.st.TopicGetByName(ctx, name)
	if err != nil {
		return out, err
	}
	ms, err := c.st.Queues().MessagesBrowse(ctx, t, q.Filter, q.Limit)
	if err != nil {
		return out, err
	}
	out.Items = append(out.Items, ms...)
	if len(ms) == q.Limit {
		out.NextCursor = encodeMessageCursor(ms[len(ms)-1])
	}
	return out, nil
}

// Message is one message with every recorded delivery attempt of it, for every
// group, oldest first; GroupNames maps the attempts' group ids to names.
type Message struct {
	Message    *models.Message
	Topic      string
	Attempts   []models.DeliveryAttempt
	GroupNames map[int64]string
}

// GetMessage loads a message by its public id (models.MessageID). Errors:
// models.ErrNotFound.
func (c *Control) GetMessage(ctx context.Context, id string) (*Message, error) {
	m, topic, err := c.st.Queues().MessageGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	as, err := c.st.AttemptsByMessage(ctx, m.QueueID, m.Offset)
	if err != nil {
		return nil, err
	}
	out := &Message{Message: m, Topic: topic, Attempts: as, GroupNames: map[int64]string{}}
	for _, a := range as {
		if _, ok := out.GroupNames[a.GroupID]; !ok {
			if g, err := c.st.GroupGetByID(ctx, a.GroupID); err == nil {
				out.GroupNames[a.GroupID] = g.Name
			}
		}
	}
	return out, nil
}
