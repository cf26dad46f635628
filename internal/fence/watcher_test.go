package fence_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/fence"
)

// TestRaiseAndWatch: a raised fence never goes down in Redis, a running Watcher
// learns it from the announcement without a Redis read, and Load reads it for a
// Watcher that missed it.
func TestRaiseAndWatch(t *testing.T) {
	t.Parallel()
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := fence.NewWatcher(rdb, keys)
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-w.Ready()

	changed := w.Changed()
	require.False(t, w.Stale(1, 2, 5))
	require.NoError(t, fence.Raise(ctx, rdb, keys, 1, map[int64]int64{2: 6, 3: 4}))
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the announcement never arrived")
	}
	require.True(t, w.Stale(1, 2, 5))
	require.False(t, w.Stale(1, 2, 6))
	require.True(t, w.Stale(1, 3, 3))
	require.False(t, w.Stale(2, 2, 1), "another group is not fenced")

	require.NoError(t, fence.Raise(ctx, rdb, keys, 1, map[int64]int64{2: 3}))
	v, err := rdb.HGet(ctx, keys.Fence(1), "2").Int64()
	require.NoError(t, err)
	require.EqualValues(t, 6, v, "a fence never goes down")

	fresh := fence.NewWatcher(rdb, keys) // never subscribed
	stale, err := fresh.Load(ctx, 1, 2, 5)
	require.NoError(t, err)
	require.True(t, stale)
	stale, err = fresh.Load(ctx, 9, 9, 1)
	require.NoError(t, err)
	require.False(t, stale, "no fence yet")
}

// BenchmarkRaiseToNotice measures how long a raised fence takes to reach a running
// Watcher (the residual window of a reset or takeover): Raise's round trip plus
// the pub/sub delivery.
func BenchmarkRaiseToNotice(b *testing.B) {
	rdb, ns := heraldtest.Redis(b)
	keys := delivery.Keys{Namespace: ns}
	ctx, cancel := context.WithCancel(context.Background())
	w := fence.NewWatcher(rdb, keys)
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-w.Ready()
	b.ResetTimer()
	for i := range b.N {
		changed := w.Changed()
		if err := fence.Raise(ctx, rdb, keys, 1, map[int64]int64{1: int64(i + 1)}); err != nil {
			b.Fatal(err)
		}
		<-changed
	}
}

// BenchmarkStale is the per-POST check: a map read under a mutex.
func BenchmarkStale(b *testing.B) {
	rdb, ns := heraldtest.Redis(b)
	keys := delivery.Keys{Namespace: ns}
	w := fence.NewWatcher(rdb, keys)
	for range b.N {
		w.Stale(1, 2, 3)
	}
}

// BenchmarkLoad is the per-job check: one HGET.
func BenchmarkLoad(b *testing.B) {
	rdb, ns := heraldtest.Redis(b)
	keys := delivery.Keys{Namespace: ns}
	ctx := context.Background()
	require.NoError(b, fence.Raise(ctx, rdb, keys, 1, map[int64]int64{2: 5}))
	w := fence.NewWatcher(rdb, keys)
	b.ResetTimer()
	for range b.N {
		if _, err := w.Load(ctx, 1, 2, 5); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConcurrentLoads: many jobs starting at once (a fan-out) each get the fence of
// their own (group, queue) as Redis holds it when they ask, and a fence raised
// between two rounds is seen by the next.
func TestConcurrentLoads(t *testing.T) {
	t.Parallel()
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	ctx := context.Background()
	const groups = 40
	for g := int64(1); g <= groups; g++ {
		require.NoError(t, fence.Raise(ctx, rdb, keys, g, map[int64]int64{7: g}))
	}
	w := fence.NewWatcher(rdb, keys) // never subscribed: only Load tells it
	for round := range 5 {
		var wg sync.WaitGroup
		errs := make(chan error, 2*groups)
		for g := int64(1); g <= groups; g++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				stale, err := w.Load(ctx, g, 7, g-1) // below the fence
				if err == nil && !stale {
					err = fmt.Errorf("round %d group %d: version %d not fenced by %d", round, g, g-1, g)
				}
				errs <- err
			}()
			go func() {
				defer wg.Done()
				stale, err := w.Load(ctx, g, 7, g+int64(round)) // at or above the fence
				if err == nil && stale {
					err = fmt.Errorf("round %d group %d: version %d fenced", round, g, g+int64(round))
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		// Raise every fence by one: the next round's Loads must see it.
		for g := int64(1); g <= groups; g++ {
			require.NoError(t, fence.Raise(ctx, rdb, keys, g, map[int64]int64{7: g + int64(round) + 1}))
		}
		stale, err := w.Load(ctx, 1, 7, int64(round)+1)
		require.NoError(t, err)
		require.True(t, stale, "round %d: a fence raised before the call is seen", round)
	}
}

// TestStatusFence: a pause reaches a running Watcher by announcement and a fresh
// one by Load; a resume at a later config version lifts it, and an older change
// raised late (a racing api) never overrides a newer one.
func TestStatusFence(t *testing.T) {
	t.Parallel()
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := fence.NewWatcher(rdb, keys)
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-w.Ready()

	_, _, ok := w.Status(1)
	require.False(t, ok, "no status seen yet")
	changed := w.Changed()
	require.NoError(t, fence.RaiseStatus(ctx, rdb, keys, 1, 7, true))
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the announcement never arrived")
	}
	v, paused, ok := w.Status(1)
	require.True(t, ok)
	require.True(t, paused)
	require.EqualValues(t, 7, v)

	require.NoError(t, fence.RaiseStatus(ctx, rdb, keys, 1, 8, false))
	require.NoError(t, fence.RaiseStatus(ctx, rdb, keys, 1, 6, true)) // older: ignored
	fresh := fence.NewWatcher(rdb, keys)                              // never subscribed
	_, err := fresh.Load(ctx, 1, 2, 1)
	require.NoError(t, err)
	v, paused, ok = fresh.Status(1)
	require.True(t, ok)
	require.False(t, paused, "the resume at version 8 holds")
	require.EqualValues(t, 8, v)
	require.Eventually(t, func() bool { v, p, _ := w.Status(1); return v == 8 && !p }, 5*time.Second, 5*time.Millisecond)
}

// TestLoadReuse: while subscribed, a Load within LoadReuse of the last read of the
// same fence answers from the in-memory view (a value written to Redis behind the
// channel's back goes unseen), announced raises still count at once, and a Load
// after LoadReuse reads Redis again.
func TestLoadReuse(t *testing.T) {
	t.Parallel()
	rdb, keys, w, advance := startClockedWatcher(t)
	ctx := context.Background()

	stale, err := w.Load(ctx, 1, 2, 5)
	require.NoError(t, err)
	require.False(t, stale, "no fence yet")
	// Unannounced: only a read of Redis can see it.
	require.NoError(t, rdb.HSet(ctx, keys.Fence(1), "2", 6).Err())
	advance(fence.LoadRefresh - time.Millisecond) // past it a Load would read again in the background
	stale, err = w.Load(ctx, 1, 2, 5)
	require.NoError(t, err)
	require.False(t, stale, "within LoadReuse the last read is reused: no HGET")

	changed := w.Changed()
	require.NoError(t, fence.Raise(ctx, rdb, keys, 1, map[int64]int64{2: 7}))
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the announcement never arrived")
	}
	stale, err = w.Load(ctx, 1, 2, 6)
	require.NoError(t, err)
	require.True(t, stale, "an announced raise fences at once")

	require.NoError(t, rdb.HSet(ctx, keys.Fence(1), "2", 9).Err())
	advance(fence.LoadReuse - fence.LoadRefresh + 2*time.Millisecond) // LoadReuse since the first read has passed
	stale, err = w.Load(ctx, 1, 2, 8)
	require.NoError(t, err)
	require.True(t, stale, "past LoadReuse Load reads Redis again")
}

// TestLoadRefresh: a Load past LoadRefresh (and within LoadReuse) answers from the
// view at once and reads the fence again in the background, so a value written
// behind the channel's back is seen without a job waiting for it, and the reuse
// runs on from that read: a Load past the first read's LoadReuse reads nothing.
func TestLoadRefresh(t *testing.T) {
	t.Parallel()
	rdb, keys, w, advance := startClockedWatcher(t)
	ctx := context.Background()

	stale, err := w.Load(ctx, 1, 2, 5)
	require.NoError(t, err)
	require.False(t, stale, "no fence yet")
	require.NoError(t, rdb.HSet(ctx, keys.Fence(1), "2", 6).Err()) // unannounced
	advance(fence.LoadRefresh - time.Millisecond)
	stale, err = w.Load(ctx, 1, 2, 5)
	require.NoError(t, err)
	require.False(t, stale, "before LoadRefresh the view answers")
	time.Sleep(50 * time.Millisecond)
	require.False(t, w.Stale(1, 2, 5), "before LoadRefresh nothing is read in the background")

	advance(2 * time.Millisecond)
	stale, err = w.Load(ctx, 1, 2, 5)
	require.NoError(t, err)
	require.False(t, stale, "past LoadRefresh the view still answers at once")
	require.Eventually(t, func() bool { return w.Stale(1, 2, 5) }, 5*time.Second, time.Millisecond,
		"the background read merges the fence written behind the channel's back")

	require.NoError(t, rdb.HSet(ctx, keys.Fence(1), "2", 9).Err()) // unannounced
	advance(fence.LoadReuse - fence.LoadRefresh)                   // past the first read's LoadReuse
	stale, err = w.Load(ctx, 1, 2, 8)
	require.NoError(t, err)
	require.False(t, stale, "the background read renewed the reuse: no read at this job's start")
}

// startClockedWatcher runs a Watcher on a fresh Redis namespace with a clock the test
// moves by advance, and waits until it is subscribed; it stops with the test.
func startClockedWatcher(t *testing.T) (*redis.Client, delivery.Keys, *fence.Watcher, func(time.Duration)) {
	t.Helper()
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	ctx, cancel := context.WithCancel(context.Background())
	w := fence.NewWatcher(rdb, keys)
	var mu sync.Mutex
	now := time.Now()
	w.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	<-w.Ready()
	return rdb, keys, w, advance
}
