package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestQueueSealStaleWriter moves a one-queue topic while a writer that still uses
// the old queue has an insert open in its transaction: the seal waits for that
// transaction (metadata lock), its watermark is exactly the stale row's id, and the
// stale writer's next insert into the sealed queue fails with ErrQueueSealed and
// stores nothing, while an insert on the new slot table goes to the new queue.
func TestQueueSealStaleWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	topic, err := st.TopicCreate(ctx, "seal", 1)
	require.NoError(t, err)
	old := topic.Queues[0]
	stale := *topic // the stale writer's copy of the topic
	stale.Queues = append([]models.Queue(nil), topic.Queues...)

	one := func(q int64, key string) []*store.PublishRequest {
		return []*store.PublishRequest{{Messages: []models.Message{{QueueID: q, Key: key, Body: []byte(`{}`), ContentType: "application/json", CreatedAt: time.Now().UnixMilli()}}}}
	}
	require.NoError(t, st.Queues().MessagesInsert(ctx, one(old.ID, "a")))

	// A stale writer's transaction inserted into the old queue and has not committed.
	tx, err := st.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	res, err := tx.ExecContext(ctx, "INSERT INTO "+models.QueueTableName(old.ID)+" (msg_key, body, content_type, created_at) VALUES ('b', '{}', 'application/json', 0)")
	require.NoError(t, err)
	staleID, err := res.LastInsertId()
	require.NoError(t, err)

	moves, err := st.Nodes().TopicMoveBegin(ctx, topic, models.PrimaryNodeID)
	require.NoError(t, err)
	require.Len(t, moves, 1)
	require.Equal(t, old.ID, moves[0].From)
	require.Len(t, moves[0].Slots, models.KeySlots)
	_, err = st.Nodes().TopicMoveBegin(ctx, topic, models.PrimaryNodeID)
	require.ErrorIs(t, err, store.ErrTopicMoving)

	type sealed struct {
		w   int64
		err error
	}
	done := make(chan sealed, 1)
	go func() {
		w, err := st.Nodes().QueueSeal(ctx, moves[0], models.PrimaryNodeID)
		done <- sealed{w, err}
	}()
	// The seal waits on the open transaction's metadata lock.
	require.Eventually(t, func() bool {
		var n int
		_ = st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE state LIKE 'Waiting for table metadata lock' AND info LIKE 'CREATE TRIGGER%'").Scan(&n)
		return n == 1
	}, 10*time.Second, 10*time.Millisecond, "the seal did not wait for the open insert")
	select {
	case s := <-done:
		t.Fatalf("the seal returned while an insert was open: %+v", s)
	default:
	}
	require.NoError(t, tx.Commit())
	s := <-done
	require.NoError(t, s.err)
	require.Equal(t, staleID, s.w, "the watermark is not the last row")

	// The stale writer tries again on its old copy: refused, nothing stored.
	q, ok := stale.QueueForKey("b")
	require.True(t, ok)
	require.Equal(t, old.ID, q.ID)
	err = st.Queues().MessagesInsert(ctx, one(q.ID, "b"))
	require.ErrorIs(t, err, models.ErrQueueSealed)
	require.False(t, errors.Is(err, models.ErrQueueUnavailable))
	var maxID int64
	require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT MAX(id) FROM "+models.QueueTableName(old.ID)).Scan(&maxID))
	require.Equal(t, staleID, maxID)

	// Reloaded, the topic routes the key to the new queue, which takes it.
	fresh, err := st.TopicGetByName(ctx, "seal")
	require.NoError(t, err)
	nq, ok := fresh.QueueForKey("b")
	require.True(t, ok)
	require.Equal(t, moves[0].To, nq.ID)
	require.Equal(t, models.QueueReadWrite, nq.State)
	require.NoError(t, st.Queues().MessagesInsert(ctx, one(nq.ID, "b")))
	for _, q := range fresh.Queues {
		if q.ID == old.ID {
			require.Equal(t, models.QueueSealed, q.State)
		}
	}
	// Sealing again (an interrupted move finished by maintenance) keeps the watermark.
	w, err := st.Nodes().QueueSeal(ctx, moves[0], models.PrimaryNodeID)
	require.NoError(t, err)
	require.Equal(t, staleID, w)

	// Nothing is owed without cursors: the old queue retires and its table goes.
	moves[0].Watermark = w
	_, retired, err := st.Nodes().QueueRetire(ctx, moves[0], models.PrimaryNodeID)
	require.NoError(t, err)
	require.True(t, retired)
	var tables int
	require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", models.QueueTableName(old.ID)).Scan(&tables))
	require.Zero(t, tables)
	after, err := st.TopicGetByName(ctx, "seal")
	require.NoError(t, err)
	require.Len(t, after.Queues, 1)
	require.Equal(t, moves[0].To, after.Queues[0].ID)
}
