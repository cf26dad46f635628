package bus_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
)

// TestRefusedWorkerFoundAgainSoon: a worker whose push reached no subscriber is
// skipped until its entry changes; once it announces again, the next Flush
// WorkerRetry later reads Keys.Workers (not only after WorkerRefresh) and pushes
// to it, as after a Redis failover that took the worker's subscription and its
// announce with it.
func TestRefusedWorkerFoundAgainSoon(t *testing.T) {
	t.Parallel()
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	jobs := bus.NewRedisJobs(rdb, asynq.RedisClientOpt{Addr: heraldtest.RedisAddr()}, keys, slog.New(slog.NewTextHandler(io.Discard, nil)), clock)
	t.Cleanup(func() { _ = jobs.Close() })
	ctx := context.Background()
	announce := func(seq int64) {
		require.NoError(t, rdb.HSet(ctx, keys.Workers(), "w1", bus.WorkerEntry{Concurrency: 4, Seq: seq}.String()).Err())
	}

	announce(1)
	require.Empty(t, send(ctx, jobs, outgoing(1, 0, 1)), "nobody listens: the job goes to asynq")

	ps := rdb.Subscribe(ctx, keys.WorkerJobs("w1"))
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(ctx)
	require.NoError(t, err)
	announce(2)
	mu.Lock()
	now = now.Add(bus.WorkerRetry)
	mu.Unlock()
	require.Empty(t, send(ctx, jobs, outgoing(1, 1, 1)))
	m, err := ps.ReceiveTimeout(ctx, 2*time.Second)
	require.NoError(t, err, "the worker announced again is pushed to within WorkerRetry")
	require.IsType(t, &redis.Message{}, m)
}

// TestWorkerAnnounceRetried: a worker whose announce failed (here the hash's key
// holds a string, so HSET answers WRONGTYPE) tries again every WorkerRetry, so its
// entry appears well within WorkerRefresh of Redis accepting it again.
func TestWorkerAnnounceRetried(t *testing.T) {
	t.Parallel()
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	ctx := context.Background()
	require.NoError(t, rdb.Set(ctx, keys.Workers(), "not a hash", time.Minute).Err())
	opt := asynq.RedisClientOpt{Addr: heraldtest.RedisAddr()}
	src := bus.NewRedisSource(workerConfig(2, true), rdb, opt, keys, slog.New(slog.NewTextHandler(io.Discard, nil)))
	start(t, &rig{src: src}, newRecorder(), 2)
	time.Sleep(2 * bus.WorkerRetry) // announces fail meanwhile
	require.Equal(t, "string", rdb.Type(ctx, keys.Workers()).Val())

	require.NoError(t, rdb.Del(ctx, keys.Workers()).Err())
	accepted := time.Now()
	require.Eventually(t, func() bool { return rdb.HLen(ctx, keys.Workers()).Val() == 1 }, bus.WorkerRefresh, 10*time.Millisecond,
		"the worker announces again within WorkerRetry")
	require.Less(t, time.Since(accepted), bus.WorkerRefresh/2)
}
