package worker

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestReportsReachTheOwnerInOrder races (60 rounds) a job's progress flush, still waiting for
// its durable copies (the senders linger), against its final flush, on the
// in-process bus with a real Redis for the copies. The owner must get the progress
// report first every time: a final report that overtakes it ends the job with the
// offsets the progress report names still unreported, and the owner sends them
// again.
func TestReportsReachTheOwnerInOrder(t *testing.T) {
	t.Parallel()
	addr := testdb.RedisAddr()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, rdb.Ping(context.Background()).Err(), "Redis must answer at %s (run `make services`)", addr)
	keys := delivery.Keys{Namespace: testdb.RandomName("t")}
	const owner = "owner-1"
	t.Cleanup(func() { rdb.Del(context.Background(), keys.Reports(owner)) })

	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	local := bus.NewInProcess()
	reports := make(chan delivery.Report)
	local.Attach(owner, reports)
	w := &Worker{keys: keys, rdb: rdb, log: slog.New(slog.DiscardHandler), local: local,
		senders: bus.NewReportSenders(rdb, keys, 20*time.Millisecond, stop, slog.New(slog.DiscardHandler))}

	for i := range 60 {
		job := delivery.Job{Group: 1, Queue: 1, Version: 1, Owner: owner, Offsets: delivery.Ranges([]int64{1, 2})}
		r := newReporter(w, job)
		r.expect(2)
		r.delivered([]int64{1}, delivery.Counters{Successes: 1, Delivered: 1})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); r.flush(false) }()
		require.Eventually(t, func() bool { // the progress flush takes offset 1 first
			r.mu.Lock()
			defer r.mu.Unlock()
			return len(r.sent) == 0
		}, 5*time.Second, 100*time.Microsecond, "round %d: the progress flush never took its offset", i)
		time.Sleep(time.Millisecond) // and waits for its copy
		go func() {
			defer wg.Done()
			r.delivered([]int64{2}, delivery.Counters{Successes: 1, Delivered: 1})
			r.flush(true)
		}()
		first, second := <-reports, <-reports
		wg.Wait()
		require.False(t, first.Final, "round %d: the final report overtook the progress report", i)
		require.Equal(t, []int64{1}, delivery.Expand(first.Delivered), "round %d", i)
		require.True(t, second.Final, "round %d", i)
		require.Equal(t, []int64{2}, delivery.Expand(second.Delivered), "round %d", i)
	}
}
