package aheadcache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var errGone = errors.New("gone")

// source is a Load that counts its reads and answers from a value that can change
// or disappear.
type source struct {
	mu    sync.Mutex
	v     int
	gone  bool
	fail  error
	reads atomic.Int32
	gate  chan struct{} // when set, a read waits until it is closed
}

func (s *source) load(context.Context, string) (int, error) {
	s.reads.Add(1)
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return 0, errGone
	}
	if s.fail != nil {
		return 0, s.fail
	}
	return s.v, nil
}

func (s *source) set(v int, gone bool, fail error) {
	s.mu.Lock()
	s.v, s.gone, s.fail = v, gone, fail
	s.mu.Unlock()
}

func newCache(s *source, ttl time.Duration, loaded func(context.Context, string, int)) *Cache[string, int] {
	return New(Options[string, int]{TTL: ttl, Load: s.load, Gone: func(err error) bool { return errors.Is(err, errGone) }, Loaded: loaded})
}

// TestServesWithinTTLAndRefreshesAhead: within TTL/2 a value is served without a
// read; the first use past TTL/2 serves the cached value and re-reads it in the
// background once, so the change shows without a read on the caller's path.
func TestServesWithinTTLAndRefreshesAhead(t *testing.T) {
	s := &source{v: 1}
	c := newCache(s, time.Second, nil)
	ctx := context.Background()
	v, err := c.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, 1, v)
	gate := make(chan struct{})
	s.mu.Lock()
	s.v, s.gate = 2, gate // the re-read waits until the test lets it answer
	s.mu.Unlock()
	v, _ = c.Get(ctx, "k")
	require.Equal(t, 1, v, "within TTL/2: the cached value")
	require.EqualValues(t, 1, s.reads.Load())

	time.Sleep(550 * time.Millisecond) // past TTL/2, within TTL
	for range 5 {
		v, _ = c.Get(ctx, "k")
		require.Equal(t, 1, v, "the cached value is served while its re-read runs")
	}
	require.Eventually(t, func() bool { return s.reads.Load() == 2 }, time.Second, time.Millisecond, "one re-read started")
	close(gate)
	require.Eventually(t, func() bool { v, _ := c.Get(ctx, "k"); return v == 2 }, time.Second, 5*time.Millisecond)
	require.EqualValues(t, 2, s.reads.Load(), "five uses past TTL/2 start one re-read")
}

// TestExpiredEntryIsReadOnThePath: an entry not used for TTL is read again on the
// caller's path, and a failed read is returned, not cached.
func TestExpiredEntryIsReadOnThePath(t *testing.T) {
	s := &source{v: 1}
	c := newCache(s, 50*time.Millisecond, nil)
	ctx := context.Background()
	_, _ = c.Get(ctx, "k")
	time.Sleep(60 * time.Millisecond)
	boom := errors.New("boom")
	s.set(3, false, boom)
	_, err := c.Get(ctx, "k")
	require.ErrorIs(t, err, boom)
	s.set(3, false, nil)
	v, err := c.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, 3, v)
	require.EqualValues(t, 3, s.reads.Load())
}

// TestGoneDropsAndDropWins: a refresh that finds the key gone drops it, so the next
// use fails at once; a refresh that started before a Drop does not bring the old
// entry back.
func TestGoneDropsAndDropWins(t *testing.T) {
	s := &source{v: 1}
	c := newCache(s, time.Second, nil)
	ctx := context.Background()
	_, _ = c.Get(ctx, "k")
	time.Sleep(550 * time.Millisecond) // past TTL/2, within TTL
	s.set(0, true, nil)
	_, _ = c.Get(ctx, "k") // starts the refresh that finds it gone
	require.Eventually(t, func() bool { _, err := c.Get(ctx, "k"); return errors.Is(err, errGone) }, time.Second, 5*time.Millisecond)

	s.set(5, false, nil)
	v, err := c.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, 5, v)
	// Drop while a refresh is under way: the refresh's CompareAndSwap finds the entry
	// gone and keeps nothing.
	blocked := make(chan struct{})
	release := make(chan struct{})
	var slowReads atomic.Int32
	slow := New(Options[string, int]{TTL: time.Second, Load: func(ctx context.Context, k string) (int, error) {
		if slowReads.Add(1) == 2 {
			close(blocked)
			<-release
		}
		return 7, nil
	}})
	_, _ = slow.Get(ctx, "k")
	time.Sleep(550 * time.Millisecond) // past TTL/2, within TTL
	_, _ = slow.Get(ctx, "k")
	<-blocked
	slow.Drop("k")
	close(release)
	time.Sleep(20 * time.Millisecond)
	n := 0
	slow.Range(func(string, int) bool { n++; return true })
	require.Zero(t, n, "the dropped key stays dropped")
}

// TestLoadedRunsOffThePath: Loaded runs after a miss (in its own goroutine) and
// after a refresh whose value was kept.
func TestLoadedRunsOffThePath(t *testing.T) {
	s := &source{v: 1}
	var loaded atomic.Int32
	c := newCache(s, time.Second, func(context.Context, string, int) { loaded.Add(1) })
	ctx := context.Background()
	_, _ = c.Get(ctx, "k")
	require.Eventually(t, func() bool { return loaded.Load() == 1 }, time.Second, time.Millisecond)
	time.Sleep(550 * time.Millisecond) // past TTL/2, within TTL
	_, _ = c.Get(ctx, "k")
	require.Eventually(t, func() bool { return loaded.Load() == 2 }, time.Second, time.Millisecond)
}
