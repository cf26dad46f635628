package dispatcher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/models"
)

// TestReplayPreviousOwnerReports: outcomes a dead owner left in its report stream are
// done for the new owner, the read position follows the commit, and a later read
// never makes a replayed offset pending again.
func TestReplayPreviousOwnerReports(t *testing.T) {
	t.Parallel()
	c := newTestCursor(10, models.Hole{From: 8, To: 8, FirstSeenMS: 1})
	c.pending = []pendingMsg{{offset: 8}} // the hole's row appeared at a re-read
	n := c.replay(delivery.Report{Delivered: []delivery.Range{{8, 8}, {11, 14}}, RetryWritten: []delivery.Range{{16, 16}}, DeadLettered: []delivery.Range{{18, 18}}})
	require.Equal(t, 7, n)
	require.Empty(t, c.pending, "a replayed offset is not sent again")
	require.Empty(t, c.holeRanges(c.committed), "the hole's row was delivered")
	require.Equal(t, int64(14), c.committed)
	require.Equal(t, int64(14), c.readPos, "reads resume after the commit")

	c.group.g = &models.Group{Subscriptions: []models.Subscription{{TopicID: 1}}}
	d := &queueReader{queueTopics: map[int64]int64{1: 1}}
	d.fanOut(c, []notify.Row{{ID: 15}, {ID: 16}, {ID: 17}, {ID: 18}, {ID: 19}}, time.Now())
	var got []int64
	for _, p := range c.pending {
		got = append(got, p.offset)
	}
	require.Equal(t, []int64{15, 17, 19}, got, "16 and 18 were reported by the previous owner")
	require.Equal(t, int64(19), c.readPos)
}
