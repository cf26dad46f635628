package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
)

// TestJobsWaker checks the wake-up path against a real Redis: a listener turns a
// poke into a value on its wake channel; a burst of pokes shares PUBLISHes; and the
// last poke of a burst is always followed by a wake-up (none is lost to coalescing).
func TestJobsWaker(t *testing.T) {
	t.Parallel()
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	ctx, cancel := context.WithCancel(context.Background())
	wake, ready, done := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go func() { bus.ListenJobs(ctx, rdb, keys, wake, ready); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("jobs subscription not confirmed")
	}
	drain := func() {
		for {
			select {
			case <-wake:
			case <-time.After(200 * time.Millisecond):
				return
			}
		}
	}
	drain() // the subscription itself wakes once
	w := bus.NewJobsWaker(rdb, keys)
	w.Poke()
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("a poke did not wake the listener")
	}

	drain()
	const burst = 1000
	for range burst {
		w.Poke()
	}
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("a burst of pokes did not wake the listener")
	}
	require.Eventually(t, func() bool { return w.Sent() >= 2 }, 5*time.Second, time.Millisecond)
	require.Less(t, w.Sent(), int64(1+burst), "pokes of a burst must share PUBLISHes")
	t.Logf("%d pokes: %d PUBLISHes", 1+burst, w.Sent())
}
