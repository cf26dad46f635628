package control

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/heraldhq/herald/models"
)

// MaxResendMessages caps one range resend: a range selecting more is refused (422)
// rather than cut short, so the caller narrows it knowingly.
const MaxResendMessages = 10_000

// ResendRange selects already-delivered messages of a group to send again: either
// Queue with FromOffset and ToOffset (inclusive), or FromTime and ToTime (publish
// time, [from, to)) across every queue of the group's topics.
type ResendRange struct {
	Queue      int64
	FromOffset int64
	ToOffset   int64
	FromTime   *time.Time
	ToTime     *time.Time
}

// ResendResult counts a resend: Queued messages went to the retry topic, Skipped
// were already waiting there.
type ResendResult struct {
	Queued  int `json:"queued"`
	Skipped int `json:"skipped"`
}

// ResendMessage sends message id (`msg_<queue>_<offset>`) to group name again
// through its retry topic, at the group's rate, under the same webhook-id; its
// herald-attempt continues from the attempts recorded. Only a message the group's
// subscription accepts as delivery does — its tag filter and its attribute filter
// (models.Subscription Matches and MatchesAttributes) — is sent again. Audited as
// group.resend. Errors: models.ErrNotFound (group, message, or a topic the group
// does not subscribe to), a *models.ValidationError on /id when the group's tag or
// attribute filter excludes the message or it is not delivered yet.
func (c *Control) ResendMessage(ctx context.Context, a Actor, name, id string) (ResendResult, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return ResendResult{}, err
	}
	q, off, err := models.ParseMessageID(id)
	if err != nil {
		return ResendResult{}, fmt.Errorf("message %q: %w", id, models.ErrNotFound)
	}
	sub, committed, err := c.resendScope(ctx, g, q)
	if err != nil {
		return ResendResult{}, err
	}
	ms, err := c.st.ResendCandidates(ctx, q, off, off, 0, 0, 1, sub.HasFilter())
	if err != nil {
		return ResendResult{}, err
	}
	if len(ms) == 0 {
		return ResendResult{}, fmt.Errorf("message %s: %w", id, models.ErrNotFound)
	}
	switch {
	case !sub.Matches(ms[0].Tag):
		return ResendResult{}, invalid("/id", fmt.Sprintf("the group's tag filter excludes this message (tag %q)", ms[0].Tag))
	case !sub.MatchesAttributes(ms[0].Headers):
		return ResendResult{}, invalid("/id", fmt.Sprintf("the group's attribute filter excludes this message (%s)", sub.Filter))
	case off > committed:
		return ResendResult{}, invalid("/id", "not delivered to this group yet; it will be sent in turn")
	}
	return c.resend(ctx, a, g, map[int64][]int64{q: {off}}, map[string]any{"id": id})
}

// resendBatch is how many messages a range resend reads from a queue at a time
// (headers included when the subscription filters on attributes), so its memory
// is one batch plus the offsets picked (at most MaxResendMessages) however long the
// range is.
const resendBatch = 1000

// ResendMessages sends the already-delivered messages that r selects to group name
// again, as ResendMessage does for one. Messages the group's subscription excludes
// (its tag filter or its attribute filter, decided as delivery decides) and
// offsets its cursor has not passed are left out, and not counted; the range is
// read in batches of resendBatch. Audited as group.resend with the range. Errors:
// a *models.ValidationError for a malformed range or one selecting more than
// MaxResendMessages (counting only the messages it would send), models.ErrNotFound.
func (c *Control) ResendMessages(ctx context.Context, a Actor, name string, r ResendRange) (ResendResult, error) {
	byQueue := r.Queue != 0 || r.FromOffset != 0 || r.ToOffset != 0
	byTime := r.FromTime != nil || r.ToTime != nil
	switch {
	case byQueue == byTime:
		return ResendResult{}, invalid("", "give either queue, from_offset and to_offset, or from_time and to_time")
	case byQueue && (r.Queue <= 0 || r.FromOffset < 1 || r.ToOffset < r.FromOffset):
		return ResendResult{}, invalid("/to_offset", "need a queue and 1 ≤ from_offset ≤ to_offset")
	case byTime && (r.FromTime == nil || r.ToTime == nil || !r.ToTime.After(*r.FromTime)):
		return ResendResult{}, invalid("/to_time", "need from_time before to_time")
	}
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return ResendResult{}, err
	}
	queues := []int64{r.Queue}
	from, to, fromMS, toMS := r.FromOffset, r.ToOffset, int64(0), int64(0)
	if byTime {
		queues, from, to = nil, 1, math.MaxInt64
		fromMS, toMS = r.FromTime.UnixMilli(), r.ToTime.UnixMilli()
		for _, sub := range g.Subscriptions {
			t, err := c.st.TopicGetByName(ctx, sub.Topic)
			if err != nil {
				return ResendResult{}, err
			}
			for _, q := range t.Queues {
				queues = append(queues, q.ID)
			}
		}
	}
	picked, n := map[int64][]int64{}, 0
	for _, q := range queues {
		sub, committed, err := c.resendScope(ctx, g, q)
		if err != nil {
			return ResendResult{}, err
		}
		for next, last := from, min(to, committed); next <= last; {
			ms, err := c.st.ResendCandidates(ctx, q, next, last, fromMS, toMS, resendBatch, sub.HasFilter())
			if err != nil {
				return ResendResult{}, err
			}
			for _, m := range ms {
				// The dispatcher's test (dispatcher.passes): the tag filter, then the attribute filter.
				if sub.Matches(m.Tag) && sub.MatchesAttributes(m.Headers) {
					picked[q] = append(picked[q], m.Offset)
					n++
				}
			}
			if n > MaxResendMessages {
				return ResendResult{}, invalid("", fmt.Sprintf("the range selects more than %d messages; narrow it", MaxResendMessages))
			}
			if len(ms) < resendBatch {
				break
			}
			next = ms[len(ms)-1].Offset + 1
		}
	}
	rec := map[string]any{"queue": r.Queue, "from_offset": r.FromOffset, "to_offset": r.ToOffset, "from_time": r.FromTime, "to_time": r.ToTime}
	return c.resend(ctx, a, g, picked, rec)
}

// resendScope returns g's subscription covering queue q and g's committed offset in
// it, or ErrNotFound when g does not subscribe to q's topic.
func (c *Control) resendScope(ctx context.Context, g *models.Group, q int64) (models.Subscription, int64, error) {
	ps, err := c.st.Cursors().GroupPositions(ctx, []int64{g.ID}, false)
	if err != nil {
		return models.Subscription{}, 0, err
	}
	for _, p := range ps {
		if p.QueueID != q {
			continue
		}
		for _, sub := range g.Subscriptions {
			if sub.TopicID == p.TopicID {
				return sub, p.Offset, nil
			}
		}
	}
	return models.Subscription{}, 0, fmt.Errorf("queue %d in the topics of group %s: %w", q, g.Name, models.ErrNotFound)
}

func (c *Control) resend(ctx context.Context, a Actor, g *models.Group, picked map[int64][]int64, rec map[string]any) (ResendResult, error) {
	var out ResendResult
	for q, offs := range picked {
		added, err := c.st.RetryResend(ctx, g.ID, q, offs)
		if err != nil {
			return out, err
		}
		out.Queued += added
		out.Skipped += len(offs) - added
	}
	c.notifyGroup(ctx, g.ID)
	rec["queued"], rec["skipped"] = out.Queued, out.Skipped
	c.Record(ctx, a, "group.resend", g.Name, nil, rec)
	return out, nil
}

func invalid(pointer, detail string) error {
	return &models.ValidationError{Errors: []models.FieldError{{Pointer: pointer, Detail: detail}}}
}
