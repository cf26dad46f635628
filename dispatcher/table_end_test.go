package dispatcher

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/testdb"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestCursorBeyondHealsAndOnlyLastingMakesReadOnly polls a real queue table with a
// cursor committed past its MAX(id): the cursor is not served, is served again once
// rows reach its offset, and only a cursor past it on polls beyondConfirm apart
// makes the queue read-only.
func TestCursorBeyondHealsAndOnlyLastingMakesReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := testdb.Database(t)
	topic, err := st.TopicCreate(ctx, "beyond", 1)
	require.NoError(t, err)
	q := topic.Queues[0].ID
	publish := func(n int) { testdb.Publish(t, st, topic.ID, q, n) }
	publish(3)

	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	cfg := config.Dispatcher{GapTimeout: 30 * time.Second, MaxSpan: 1000}
	rd := newQueueReader(st.Sides(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), clock, func(time.Time) {})
	gs := &groupState{g: &models.Group{ID: 1, Status: models.GroupRunning}}
	cs := newCursorState(models.Cursor{ID: 1, GroupID: 1, QueueID: q, Offset: 5, Version: 1}, gs)
	cs.readPos = 5
	rd.add(cs)
	state := func() models.QueueState {
		tp, err := st.TopicGetByName(ctx, "beyond")
		require.NoError(t, err)
		return tp.Queues[0].State
	}

	rd.poll(ctx)
	require.True(t, cs.beyond, "committed 5 over MAX(id) 3")
	require.Zero(t, rd.room(cs), "a cursor beyond is not served")
	now = now.Add(beyondConfirm / 2)
	rd.poll(ctx)
	require.Equal(t, models.QueueReadWrite, state(), "one sighting, or two within beyondConfirm, make nothing read-only")

	publish(2)
	rd.poll(ctx)
	require.False(t, cs.beyond, "rows reached the commit: served again")
	require.Positive(t, rd.room(cs))

	cs.committed, cs.readPos = 9, 9
	rd.poll(ctx)
	require.True(t, cs.beyond)
	require.Equal(t, models.QueueReadWrite, state())
	now = now.Add(beyondConfirm)
	rd.poll(ctx)
	require.Equal(t, models.QueueReadOnly, state(), "beyond on two polls beyondConfirm apart: read-only")
}

// awayStore is the real store with its queue reads failing while away is set, as
// when the queue's db node does not answer.
type awayStore struct {
	store.Sides
	away bool
}

func (a *awayStore) QueueMaxIDs(ctx context.Context, qs []int64) (map[int64]int64, error) {
	if a.away {
		return nil, errors.New("db node away")
	}
	return a.Queues.QueueMaxIDs(ctx, qs)
}

func (a *awayStore) QueueRowsByIDs(ctx context.Context, q int64, ids []int64) ([]store.RowMeta, error) {
	if a.away {
		return nil, errors.New("db node away")
	}
	return a.Queues.QueueRowsByIDs(ctx, q, ids)
}

// TestHoleTimerRunsOnlyWhileTheNodeAnswers opens a hole on a real queue table and
// keeps its node away past gap_timeout: the hole stays open, and once the node
// answers again it gets the whole gap_timeout, in which its row shows up and is
// delivered rather than closed as a rollback.
func TestHoleTimerRunsOnlyWhileTheNodeAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, real := testdb.Database(t)
	topic, err := real.TopicCreate(ctx, "holes", 1)
	require.NoError(t, err)
	q := topic.Queues[0].ID
	publish := func() { testdb.Publish(t, real, topic.ID, q, 1) }
	publish() // offset 1
	publish() // offset 2

	st := &awayStore{Sides: real.Sides()}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg := config.Dispatcher{GapTimeout: 30 * time.Second, MaxSpan: 1000}
	rd := newQueueReader(st, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func() time.Time { return now }, func(time.Time) {})
	gs := &groupState{g: &models.Group{ID: 1, Status: models.GroupRunning}}
	cs := newCursorState(models.Cursor{ID: 1, GroupID: 1, QueueID: q, Offset: 2, Version: 1}, gs)
	cs.readPos = 3
	cs.holes[3] = now.UnixMilli() // offset 3 seen missing below a later row
	rd.add(cs)

	st.away = true
	now = now.Add(time.Minute)
	rd.poll(ctx)
	require.Contains(t, cs.holes, int64(3), "the node was away: no read, no close")
	st.away = false
	now = now.Add(time.Second)
	rd.poll(ctx)
	require.Contains(t, cs.holes, int64(3), "back for a second: the hole gets gap_timeout from now")
	now = now.Add(20 * time.Second)
	publish() // offset 3, committed late (a prepared branch recovery committed)
	rd.poll(ctx)
	require.NotContains(t, cs.holes, int64(3))
	require.Len(t, cs.pending, 1, "the late row is sent, not closed as a rollback")
	require.Equal(t, int64(3), cs.pending[0].offset)
}
