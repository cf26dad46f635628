package groupcommit_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// flushes records each Published call, which is one committed flush.
type flushes struct {
	mu  sync.Mutex
	all [][]notify.Event
}

// rows counts the rows of every recorded notification.
func (f *flushes) rows() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, evs := range f.all {
		for _, ev := range evs {
			n += len(ev.Rows)
		}
	}
	return n
}

func (f *flushes) Published(_ context.Context, evs []notify.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all = append(f.all, evs)
	return nil
}

// TestFlushPutsKeylessMessagesInOneQueue: concurrent single-message publishes of
// one topic share flushes, and every flush writes its keyless messages to one
// queue (round-robin per flush), while keyed messages keep their key's queue. The
// notification lists exactly the committed rows, in id order, with their bodies.
func TestFlushPutsKeylessMessagesInOneQueue(t *testing.T) {
	_, st := heraldtest.Database(t)
	ctx := context.Background()
	topic, err := st.TopicCreate(ctx, "spread", 4)
	require.NoError(t, err)
	spread := make([]int64, len(topic.Queues))
	for i, q := range topic.Queues {
		spread[i] = q.ID
	}
	rec := &flushes{}
	w, err := groupcommit.New(groupcommit.Config{Store: st, Notifier: rec, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = w.Run(wctx); close(done) }()
	defer func() { stop(); <-done }()

	const publishers, each = 16, 25
	keyed := topic.Queues[2].ID
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m := models.Message{Body: []byte(`{"n":1}`), ContentType: "application/json", CreatedAt: time.Now().UnixMilli()}
				if p == 0 && i%5 == 0 {
					m.Key, m.QueueID = "k", keyed
				}
				require.NoError(t, w.Submit(ctx, &store.PublishRequest{Messages: []models.Message{m}, TopicID: topic.ID, Spread: spread,
					Respond: func([]models.Message) (int, []byte) { return 201, nil }}))
			}
		}()
	}
	wg.Wait()
	// Requests are answered before their flush is notified, so the last
	// notification may still be on its way when the last Submit returns.
	require.Eventually(t, func() bool { return rec.rows() >= publishers*each }, 10*time.Second, time.Millisecond,
		"every committed row is notified")

	rec.mu.Lock()
	defer rec.mu.Unlock()
	rows, shared, queues := 0, 0, map[int64]bool{}
	for _, evs := range rec.all {
		keyless, keylessQueues := 0, map[int64]bool{}
		for _, ev := range evs {
			require.NotEmpty(t, ev.Rows)
			for i, r := range ev.Rows {
				require.NotNil(t, r.Msg)
				require.Equal(t, ev.Queue, r.Msg.QueueID)
				require.Equal(t, r.ID, r.Msg.Offset)
				require.Equal(t, `{"n":1}`, string(r.Msg.Body))
				if i > 0 {
					require.Greater(t, r.ID, ev.Rows[i-1].ID, "rows in id order")
				}
				if r.Msg.Key == "" {
					keyless++
					keylessQueues[ev.Queue] = true
					queues[ev.Queue] = true
				} else {
					require.Equal(t, keyed, ev.Queue, "a keyed message stays in its key's queue")
				}
			}
			rows += len(ev.Rows)
		}
		require.LessOrEqual(t, len(keylessQueues), 1, "a flush writes its keyless messages to one queue")
		if keyless > 1 {
			shared++
		}
	}
	require.Equal(t, publishers*each, rows, "every committed row is notified once")
	require.Positive(t, shared, "concurrent publishes shared at least one flush")
	require.Greater(t, len(queues), 1, "flushes rotate over the topic's queues")
}
