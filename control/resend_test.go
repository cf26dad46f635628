package control_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestResendMessagesFiltersLongRanges: a range resend applies the group's tag and
// attribute filters to every message of a range much longer than one read batch:
// matching messages behind more than MaxResendMessages excluded ones are found,
// only matching ones are queued and counted, and the cap counts matching messages
// only (a range with more of them is refused and queues nothing).
func TestResendMessagesFiltersLongRanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	topic, err := b.ctl.CreateTopic(b.ctx, b.actor, control.TopicSpec{Name: "orders", Queues: ptr(1)})
	require.NoError(t, err)
	q := topic.Queues[0].ID
	// Offsets 1..excludedFirst: region us (excluded); then matching (tag created, region
	// eu) at odd positions, interleaved with tag-filtered ones (tag deleted, region eu).
	const excludedFirst = control.MaxResendMessages + 100
	const tail = 2*control.MaxResendMessages + 2
	now := time.Now().UnixMilli()
	var msgs []models.Message
	for i := range excludedFirst + tail {
		m := models.Message{QueueID: q, Tag: "created", Headers: map[string]string{"x-region": "us"},
			Body: []byte(`{}`), ContentType: "application/json", CreatedAt: now}
		if i >= excludedFirst {
			m.Headers = map[string]string{"x-region": "eu"}
			if (i-excludedFirst)%2 == 1 {
				m.Tag = "deleted"
			}
		}
		msgs = append(msgs, m)
	}
	for start := 0; start < len(msgs); start += 1000 {
		require.NoError(t, b.st.Queues().MessagesInsert(b.ctx, []*store.PublishRequest{{Messages: msgs[start:min(start+1000, len(msgs))]}}))
	}
	g, err := b.ctl.CreateGroup(b.ctx, b.actor, control.GroupSpec{Name: "eu-billing", EndpointURL: "http://8.8.8.8/hook",
		Subscriptions: []models.Subscription{{Topic: "orders", Tags: []string{"created"}, Filter: `attributes.x-region = "eu"`}}})
	require.NoError(t, err)
	require.Equal(t, models.ConsumeLatest, g.ConsumeFrom, "the cursor starts past every message: all are delivered")
	waiting := func() int64 {
		n, err := b.st.RetryCount(b.ctx, g.ID)
		require.NoError(t, err)
		return n
	}

	// All of it: MaxResendMessages+1 matching messages, refused; nothing queued.
	_, err = b.ctl.ResendMessages(b.ctx, b.actor, "eu-billing", control.ResendRange{Queue: q, FromOffset: 1, ToOffset: excludedFirst + tail})
	requireFields(t, err, "")
	from, to := time.UnixMilli(now), time.UnixMilli(now+1)
	_, err = b.ctl.ResendMessages(b.ctx, b.actor, "eu-billing", control.ResendRange{FromTime: &from, ToTime: &to})
	requireFields(t, err, "")
	require.Zero(t, waiting())

	// Excluded messages first, then 300 messages of which 150 match.
	res, err := b.ctl.ResendMessages(b.ctx, b.actor, "eu-billing", control.ResendRange{Queue: q, FromOffset: 1, ToOffset: excludedFirst + 300})
	require.NoError(t, err)
	require.Equal(t, control.ResendResult{Queued: 150}, res)
	require.EqualValues(t, 150, waiting())

	// Only excluded messages: nothing.
	res, err = b.ctl.ResendMessages(b.ctx, b.actor, "eu-billing", control.ResendRange{Queue: q, FromOffset: 1, ToOffset: excludedFirst})
	require.NoError(t, err)
	require.Equal(t, control.ResendResult{}, res)

	// One at a time: excluded by attributes or by tag, refused on /id; matching, queued.
	for _, off := range []int64{1, excludedFirst + 2} {
		_, err = b.ctl.ResendMessage(b.ctx, b.actor, "eu-billing", models.MessageID(q, off))
		requireFields(t, err, "/id")
	}
	res, err = b.ctl.ResendMessage(b.ctx, b.actor, "eu-billing", models.MessageID(q, excludedFirst+301))
	require.NoError(t, err)
	require.Equal(t, control.ResendResult{Queued: 1}, res)
	require.EqualValues(t, 151, waiting())
}
