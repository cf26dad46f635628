package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestRetentionEmptiedQueueKeepsItsOffset: every group consumed everything and the
// topic went quiet past its retention, so retention deletes every row (strict and
// consumed alike). The queue's max offset stays at the last offset, never below the
// cursors (the dispatcher would take them for cursors beyond the table and make the
// queue read-only), a group created at latest starts there, and the next message
// gets a higher offset.
func TestRetentionEmptiedQueueKeepsItsOffset(t *testing.T) {
	t.Parallel()
	for _, policy := range []models.RetentionPolicy{models.RetentionConsumed, models.RetentionStrict} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			r := setupRetention(t)
			ctx := context.Background()
			topic, err := r.st.TopicGetByName(ctx, "orders")
			require.NoError(t, err)
			require.NoError(t, r.st.TopicSetRetention(ctx, topic.ID, 1, policy))
			for _, q := range []string{
				"DELETE FROM retry_messages", "DELETE FROM dead_letters",
				"UPDATE cursors SET committed_offset = 110",
				"UPDATE " + models.QueueTableName(r.queue) + " SET created_at = created_at - 3 * 3600 * 1000 WHERE id > 100",
			} {
				_, err := r.db.Exec(q)
				require.NoError(t, err)
			}
			m, _ := r.start(t)
			require.Eventually(t, m.Leader, 5*time.Second, 10*time.Millisecond)
			require.Eventually(t, func() bool { return len(r.offsets(t)) == 0 }, 10*time.Second, 20*time.Millisecond, "every row is past retention and consumed")
			maxes, err := r.st.Queues().QueueMaxIDs(ctx, []int64{r.queue})
			require.NoError(t, err)
			require.EqualValues(t, 110, maxes[r.queue], "the emptied queue keeps its max offset")
			late := &models.Group{Name: heraldtest.RandomName("late"), EndpointURL: "http://127.0.0.1:9/hook", SigningSecret: signing.NewSecret(),
				Subscriptions: []models.Subscription{{Topic: "orders"}}, ConsumeFrom: models.ConsumeLatest}
			late.ApplyDefaults()
			require.NoError(t, r.st.GroupCreate(ctx, late))
			cs, err := r.st.Cursors().CursorsByGroups(ctx, []int64{late.ID})
			require.NoError(t, err)
			require.EqualValues(t, 110, cs[0].Offset, "latest is the remembered offset")
			req := &store.PublishRequest{Messages: []models.Message{{QueueID: r.queue, Body: []byte(`{}`), ContentType: "application/json", CreatedAt: time.Now().UnixMilli()}}}
			require.NoError(t, r.st.Queues().MessagesInsert(ctx, []*store.PublishRequest{req}))
			require.EqualValues(t, 111, req.Messages[0].Offset, "new offsets stay above the consumed ones")
		})
	}
}
