package bus_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
)

// The bus contract, held by every implementation against a real Redis (as
// watermill's TestPubSub and river's riverdrivertest hold theirs):
//
//   - every job sent runs exactly once, or is refused, or stays Alive until a
//     worker takes it (EveryJobRunsOnce, StopReturnsWaiting);
//   - a worker runs at most len(Slots) jobs at once, whatever carried them
//     (ConcurrencyBound);
//   - a job a worker holds, running or waiting for a slot, is Alive; once its
//     worker died it is Lost or no longer Alive (AliveWhileHeld, DeadWorker);
//   - a stopping worker calls halt before it returns the jobs that wait for a
//     slot, and runs none of them (StopReturnsWaiting);
//   - a job a worker has held for FirstBeat is found by Open for its owner, group
//     and queue, with its parallelism, until it ends (OpenWhileHeld).
//
// Where they differ, the rig declares it: InProcess dies with its dispatcher, so it
// has no dead worker to judge and no job outliving its owner to Open; asynq keeps a job no worker has taken for the next
// worker, where the others return it.
//
// The guarantees built on this contract (fencing after a reset or takeover,
// reports surviving their owner, the duplicate bound after a crash of either side,
// ordering by queue and by key) are held end to end on both buses by the e2e suite,
// each in `herald all` (InProcess) and across separate roles (Redis).

// rig is one implementation under the contract.
type rig struct {
	jobs bus.Jobs
	src  bus.Source
	// kill makes the worker's process lose Redis for good, as a kill -9 would; nil
	// where the worker dies with its dispatcher.
	kill func()
	// later moves the dispatcher end's clock on.
	later func(time.Duration)
	// keepsUntaken: a job no worker took when the worker stops stays for the next
	// worker (Alive) instead of being returned.
	keepsUntaken bool
	// lapses: a dead worker's jobs are also Lost, sooner than their deadline (a
	// pushed job's worker entry lapses); otherwise only Alive tells.
	lapses bool
	// opensNone: Open finds no job (its jobs end with their dispatcher).
	opensNone bool
}

// heartbeatTTL is the Redis sources' heartbeat expiry in the contract: short, so
// liveness is seen within a test.
const heartbeatTTL = 300 * time.Millisecond

var rigs = []struct {
	name string
	open func(t *testing.T, slots int) *rig
}{
	{"in-process", func(t *testing.T, slots int) *rig {
		p := bus.NewInProcess()
		return &rig{jobs: p, src: p, later: func(time.Duration) {}, opensNone: true}
	}},
	{"redis-pushed", func(t *testing.T, slots int) *rig { return openRedis(t, slots, true) }},
	{"redis-asynq", func(t *testing.T, slots int) *rig { return openRedis(t, slots, false) }},
}

// openRedis returns the Redis bus on a fresh namespace: the worker's end on a
// client of its own (kill closes it), pushing jobs when push is set.
func openRedis(t *testing.T, slots int, push bool) *rig {
	t.Helper()
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	opt := asynq.RedisClientOpt{Addr: heraldtest.RedisAddr()}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var mu sync.Mutex
	var skew time.Duration
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return time.Now().Add(skew)
	}
	jobs := bus.NewRedisJobs(rdb, opt, keys, log, clock)
	t.Cleanup(func() { _ = jobs.Close() })
	wrdb := redis.NewClient(&redis.Options{Addr: heraldtest.RedisAddr()})
	t.Cleanup(func() { _ = wrdb.Close() })
	src := bus.NewRedisSource(workerConfig(slots, push), wrdb, opt, keys, log)
	return &rig{jobs: jobs, src: src, keepsUntaken: !push, lapses: push, kill: func() { _ = wrdb.Close() }, later: func(d time.Duration) {
		mu.Lock()
		skew += d
		mu.Unlock()
	}}
}

// workerConfig is a test worker's configuration: slots jobs at once, pushed jobs
// taken when push, short checks and heartbeats.
func workerConfig(slots int, push bool) config.Worker {
	return config.Worker{Concurrency: slots, TaskCheckInterval: 100 * time.Millisecond, DelayedTaskCheckInterval: time.Second,
		ShutdownTimeout: 5 * time.Second, HeartbeatTTL: heartbeatTTL, PushJobs: push}
}

// recorder is the Runner under the contract: it counts runs and returns by task
// id and the jobs open at once; while hold is open, a job runs until it closes or
// its context ends.
type recorder struct {
	mu       sync.Mutex
	runs     map[string]int
	returned map[string]int
	open     atomic.Int64
	maxOpen  atomic.Int64
	hold     chan struct{}
	runFor   time.Duration
	halted   atomic.Bool
	// returnedBeforeHalt counts jobs returned while halt had not been called.
	returnedBeforeHalt atomic.Int64
}

func newRecorder() *recorder {
	return &recorder{runs: map[string]int{}, returned: map[string]int{}}
}

func (r *recorder) RunJob(ctx context.Context, j delivery.Job) {
	n := r.open.Add(1)
	for {
		m := r.maxOpen.Load()
		if n <= m || r.maxOpen.CompareAndSwap(m, n) {
			break
		}
	}
	r.mu.Lock()
	r.runs[j.TaskID()]++
	hold := r.hold
	r.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
		}
	}
	time.Sleep(r.runFor)
	r.open.Add(-1)
}

func (r *recorder) ReturnJob(j delivery.Job) {
	if !r.halted.Load() {
		r.returnedBeforeHalt.Add(1)
	}
	r.mu.Lock()
	r.returned[j.TaskID()]++
	r.mu.Unlock()
}

func (r *recorder) counts() (runs, returned map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	runs, returned = map[string]int{}, map[string]int{}
	for k, v := range r.runs {
		runs[k] = v
	}
	for k, v := range r.returned {
		returned[k] = v
	}
	return runs, returned
}

// outgoing returns n jobs of group g, one offset each, under distinct task ids.
func outgoing(g int64, from, n int) []bus.Outgoing {
	out := make([]bus.Outgoing, n)
	for i := range out {
		off := int64(from + i + 1)
		out[i] = bus.Outgoing{Timeout: 30 * time.Second, Job: delivery.Job{Group: g, Queue: 1, Version: 1, Owner: "d1",
			Offsets: []delivery.Range{{off, off}}, Parallelism: 1, Attempt: 1}}
	}
	return out
}

// send sends jobs as one step does (Send, then Flush) and returns what the bus
// refused.
func send(ctx context.Context, b bus.Jobs, jobs []bus.Outgoing) []bus.Refusal {
	return append(b.Send(ctx, jobs), b.Flush(ctx)...)
}

// start starts rig's source on rec with slots and stops it when the test ends
// (unless stopped before).
func start(t *testing.T, r *rig, rec *recorder, slots int) (stop func()) {
	t.Helper()
	require.NoError(t, r.src.Start(context.Background(), rec, bus.NewSlots(slots)))
	var once sync.Once
	stop = func() { once.Do(func() { r.src.Stop(func() { rec.halted.Store(true) }) }) }
	t.Cleanup(stop)
	return stop
}

func TestBusContract(t *testing.T) {
	for _, impl := range rigs {
		t.Run(impl.name, func(t *testing.T) {
			t.Parallel()
			t.Run("EveryJobRunsOnce", func(t *testing.T) { t.Parallel(); everyJobRunsOnce(t, impl.open) })
			t.Run("ConcurrencyBound", func(t *testing.T) { t.Parallel(); concurrencyBound(t, impl.open) })
			t.Run("AliveWhileHeld", func(t *testing.T) { t.Parallel(); aliveWhileHeld(t, impl.open) })
			t.Run("DeadWorker", func(t *testing.T) { t.Parallel(); deadWorker(t, impl.open) })
			t.Run("StopReturnsWaiting", func(t *testing.T) { t.Parallel(); stopReturnsWaiting(t, impl.open) })
			t.Run("OpenWhileHeld", func(t *testing.T) { t.Parallel(); openWhileHeld(t, impl.open) })
		})
	}
}

// everyJobRunsOnce: 40 jobs in four sends, some sent before the worker started,
// each run exactly once and none refused.
func everyJobRunsOnce(t *testing.T, open func(*testing.T, int) *rig) {
	r := open(t, 8)
	rec := newRecorder()
	ctx := context.Background()
	require.Empty(t, send(ctx, r.jobs, outgoing(1, 0, 10)), "sent before the worker started")
	start(t, r, rec, 8)
	for i := 1; i < 4; i++ {
		require.Empty(t, send(ctx, r.jobs, outgoing(1, 10*i, 10)))
	}
	require.Eventually(t, func() bool { runs, _ := rec.counts(); return len(runs) == 40 }, 15*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	runs, returned := rec.counts()
	require.Len(t, runs, 40)
	for id, n := range runs {
		require.Equal(t, 1, n, "job %s", id)
	}
	require.Empty(t, returned)
}

// concurrencyBound: 3 slots, 24 jobs of 40 ms each sent at once: never more than
// 3 run at once, and all of them run.
func concurrencyBound(t *testing.T, open func(*testing.T, int) *rig) {
	r := open(t, 3)
	rec := newRecorder()
	rec.runFor = 40 * time.Millisecond
	start(t, r, rec, 3)
	require.Empty(t, send(context.Background(), r.jobs, outgoing(2, 0, 24)))
	require.Eventually(t, func() bool { runs, _ := rec.counts(); return len(runs) == 24 }, 15*time.Second, 10*time.Millisecond)
	require.LessOrEqual(t, rec.maxOpen.Load(), int64(3))
	require.Equal(t, int64(3), rec.maxOpen.Load(), "the slots are used")
}

// aliveWhileHeld: one slot held by a job that does not end; it and the job waiting
// behind it are Alive; once released and returned, neither is.
func aliveWhileHeld(t *testing.T, open func(*testing.T, int) *rig) {
	r := open(t, 1)
	rec := newRecorder()
	rec.hold = make(chan struct{})
	start(t, r, rec, 1)
	ctx := context.Background()
	first, second := outgoing(3, 0, 1), outgoing(3, 1, 1)
	require.Empty(t, send(ctx, r.jobs, first))
	require.Eventually(t, func() bool { return rec.open.Load() == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Empty(t, send(ctx, r.jobs, second))
	time.Sleep(2 * heartbeatTTL)
	require.True(t, r.jobs.Alive(ctx, first[0].Job), "the running job")
	require.True(t, r.jobs.Alive(ctx, second[0].Job), "the job waiting for a slot")
	require.Empty(t, r.jobs.Lost(ctx))
	close(rec.hold)
	require.Eventually(t, func() bool { runs, _ := rec.counts(); return len(runs) == 2 && rec.open.Load() == 0 }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		return !r.jobs.Alive(ctx, first[0].Job) && !r.jobs.Alive(ctx, second[0].Job)
	}, 5*time.Second, 20*time.Millisecond, "returned jobs are not held")
}

// openWhileHeld: a job of parallelism 3 held past FirstBeat is Open for its owner,
// group and queue (not for another owner, where keys carry the owner, nor for
// another group), and once it ended StillOpen no longer lists it.
func openWhileHeld(t *testing.T, open func(*testing.T, int) *rig) {
	r := open(t, 1)
	rec := newRecorder()
	rec.hold = make(chan struct{})
	start(t, r, rec, 1)
	ctx := context.Background()
	j := outgoing(5, 0, 1)
	j[0].Job.Parallelism = 3
	require.Empty(t, send(ctx, r.jobs, j))
	require.Eventually(t, func() bool { return rec.open.Load() == 1 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(min(heartbeatTTL/3, bus.FirstBeat) + 100*time.Millisecond)
	got, err := r.jobs.Open(ctx, "d1", 5, 1)
	require.NoError(t, err)
	if r.opensNone {
		require.Empty(t, got)
		close(rec.hold)
		return
	}
	require.Len(t, got, 1)
	require.Equal(t, 3, got[0].POSTs)
	other, err := r.jobs.Open(ctx, "d1", 6, 1)
	require.NoError(t, err)
	require.Empty(t, other, "another group's")
	still, err := r.jobs.StillOpen(ctx, got)
	require.NoError(t, err)
	require.Equal(t, got, still)
	close(rec.hold)
	require.Eventually(t, func() bool {
		still, err := r.jobs.StillOpen(ctx, got)
		return err == nil && len(still) == 0
	}, 5*time.Second, 20*time.Millisecond, "an ended job is not open")
}

// deadWorker: the worker's process loses Redis for good while it holds a job: the
// job is no longer Alive once its heartbeat expired, and, pushed, Lost once its
// worker's entry lapsed. InProcess has no dead worker apart from its dispatcher.
func deadWorker(t *testing.T, open func(*testing.T, int) *rig) {
	r := open(t, 2)
	if r.kill == nil {
		t.Skip("the worker dies with its dispatcher: nothing is left to judge")
	}
	rec := newRecorder()
	rec.hold = make(chan struct{})
	defer close(rec.hold)
	start(t, r, rec, 2)
	ctx := context.Background()
	j := outgoing(4, 0, 1)
	require.Empty(t, send(ctx, r.jobs, j))
	require.Eventually(t, func() bool { return rec.open.Load() == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Empty(t, r.jobs.Lost(ctx))
	r.kill()
	require.Eventually(t, func() bool { return !r.jobs.Alive(ctx, j[0].Job) }, 5*time.Second, 20*time.Millisecond, "heartbeat expired")
	if !r.lapses {
		return
	}
	r.later(bus.WorkerLapse + bus.WorkerRefresh)
	require.Eventually(t, func() bool {
		r.later(bus.WorkerRefresh)
		return fmt.Sprint(r.jobs.Lost(ctx)) == fmt.Sprint([]string{j[0].Job.TaskID()})
	}, 5*time.Second, 50*time.Millisecond, "the lapsed worker's job is Lost")
}

// stopReturnsWaiting: one slot held, four jobs waiting behind it; Stop calls halt
// first, returns every waiting job (or, on asynq, leaves those no worker took
// Alive for the next worker) and runs none of them.
func stopReturnsWaiting(t *testing.T, open func(*testing.T, int) *rig) {
	r := open(t, 1)
	rec := newRecorder()
	rec.hold = make(chan struct{})
	stop := start(t, r, rec, 1)
	ctx := context.Background()
	first := outgoing(5, 0, 1)
	require.Empty(t, send(ctx, r.jobs, first))
	require.Eventually(t, func() bool { return rec.open.Load() == 1 }, 10*time.Second, 5*time.Millisecond)
	waiting := outgoing(5, 1, 4)
	require.Empty(t, send(ctx, r.jobs, waiting))
	time.Sleep(300 * time.Millisecond) // the waiting jobs reach the worker
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	require.Eventually(t, rec.halted.Load, 10*time.Second, 5*time.Millisecond)
	close(rec.hold)
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("Stop did not return")
	}
	runs, returned := rec.counts()
	require.Equal(t, map[string]int{first[0].Job.TaskID(): 1}, runs, "no waiting job runs after halt")
	require.Zero(t, rec.returnedBeforeHalt.Load(), "halt comes first")
	for _, o := range waiting {
		id := o.Job.TaskID()
		if returned[id] == 1 {
			continue
		}
		require.True(t, r.keepsUntaken, "job %s neither run nor returned", id)
		require.True(t, r.jobs.Alive(ctx, o.Job), "job %s left for the next worker", id)
	}
}
