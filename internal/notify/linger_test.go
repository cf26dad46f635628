package notify_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
)

// TestPublishedLinger checks Notifier.Linger on a real Redis: a flush after a quiet
// interval is announced at once; flushes that follow within the interval are held,
// one event per queue with rows joined in id order, until the next flush past the
// interval takes them along or, with none, 2 × the interval after the last send;
// Close sends what is held at once.
func TestPublishedLinger(t *testing.T) {
	t.Parallel()
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	ctx, cancel := context.WithCancel(context.Background())
	events, done := make(chan notify.Event, 16), make(chan struct{})
	go func() { defer close(done); notify.Subscribe(ctx, rdb, keys, events, nil) }()
	defer func() { cancel(); <-done }()
	ch := keys.NotifyChannel()
	require.Eventually(t, func() bool { return rdb.PubSubNumSub(ctx, ch).Val()[ch] == 1 }, 5*time.Second, 10*time.Millisecond)

	const every = 400 * time.Millisecond
	n := notify.New(rdb, keys).Linger(every, slog.New(slog.NewTextHandler(io.Discard, nil)))
	flush := func(queue int64, ids ...int64) {
		ev := notify.Event{Queue: queue}
		for _, id := range ids {
			ev.Rows = append(ev.Rows, notify.Row{ID: id, CreatedAt: 1000})
		}
		require.NoError(t, n.Published(ctx, []notify.Event{ev}))
	}
	next := func(within time.Duration) (notify.Event, time.Time) {
		t.Helper()
		select {
		case ev := <-events:
			return ev, time.Now()
		case <-time.After(within):
			t.Fatalf("no notification within %v", within)
			return notify.Event{}, time.Time{}
		}
	}
	ids := func(ev notify.Event) []int64 {
		var out []int64
		for _, r := range ev.Rows {
			out = append(out, r.ID)
		}
		return out
	}

	start := time.Now()
	flush(1, 1)
	ev, at := next(every / 2)
	require.Equal(t, []int64{1}, ids(ev), "a lone flush goes at once")
	require.Less(t, at.Sub(start), every/2)

	flush(1, 2)
	flush(2, 5)
	flush(1, 3, 4)
	first, at := next(4 * every)
	second, _ := next(every / 2)
	require.GreaterOrEqual(t, at.Sub(start), 2*every-20*time.Millisecond, "with no flush after them, held flushes wait 2 × every")
	require.Equal(t, int64(1), first.Queue)
	require.Equal(t, []int64{2, 3, 4}, ids(first), "one event per queue, rows joined in id order")
	require.Equal(t, int64(2), second.Queue)
	require.Equal(t, []int64{5}, ids(second))

	flush(3, 8)
	time.Sleep(every + 20*time.Millisecond)
	start = time.Now()
	flush(3, 9)
	ev, at = next(every / 2)
	require.Equal(t, []int64{8, 9}, ids(ev), "a flush past the interval takes the held one along")
	require.Less(t, at.Sub(start), every/2)

	time.Sleep(2*every + every/4)
	start = time.Now()
	flush(3, 10)
	ev, at = next(every / 2)
	require.Equal(t, []int64{10}, ids(ev), "after a quiet interval a flush goes at once again")
	require.Less(t, at.Sub(start), every/2)

	flush(3, 11)
	n.Close()
	ev, at = next(every / 2)
	require.Equal(t, []int64{11}, ids(ev), "Close sends what is held")
	require.Less(t, at.Sub(start), every/2+every/4)
	flush(3, 12)
	ev, _ = next(every / 2)
	require.Equal(t, []int64{12}, ids(ev), "after Close nothing is held")
	select {
	case ev := <-events:
		t.Fatalf("unexpected notification %+v", ev)
	case <-time.After(every + every/4):
	}
}
