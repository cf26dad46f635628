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

// TestJobsWakerCluster checks the wake-up path on a real Redis Cluster: the
// listener subscribes with SSUBSCRIBE at the jobs channel's slot owner, a poke's
// SPUBLISH wakes it, and after the slot moved to another master (the server ends
// the subscription) the listener subscribes at the new owner and pokes wake it
// again.
func TestJobsWakerCluster(t *testing.T) {
	t.Parallel()
	cluster := heraldtest.StartRedisCluster(t)
	rdb := cluster.Client()
	require.True(t, delivery.Sharded(rdb))
	keys := delivery.Keys{Namespace: heraldtest.RandomName("t"), HashTags: true}
	ctx, cancel := context.WithCancel(context.Background())
	wake, ready, done := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go func() { bus.ListenJobs(ctx, rdb, keys, wake, ready); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("jobs subscription not confirmed")
	}
	ch := keys.JobsChannel()
	subscribers := func() int64 {
		owner := cluster.Master(cluster.Slot(ch)).Client(t)
		return owner.PubSubShardNumSub(context.Background(), ch).Val()[ch]
	}
	require.Equal(t, int64(1), subscribers(), "one sharded subscriber at the slot's owner")
	w := bus.NewJobsWaker(rdb, keys)
	woken := func(what string) {
		t.Helper()
		for { // empty the channel: (re)subscriptions wake too
			select {
			case <-wake:
				continue
			default:
			}
			break
		}
		w.Poke()
		select {
		case <-wake:
		case <-time.After(5 * time.Second):
			t.Fatalf("a poke did not wake the listener %s", what)
		}
	}
	woken("before the slot moved")

	slot := cluster.Slot(ch)
	from, to := cluster.Master(slot), cluster.Master(slot)
	for probe := 0; to == from; probe += 1000 { // masters split the slots in three ranges
		to = cluster.Master(probe)
	}
	cluster.MoveSlot(slot, to)
	require.Eventually(t, func() bool { return subscribers() == 1 }, 10*time.Second, 20*time.Millisecond,
		"the listener subscribes again at the slot's new owner")
	woken("after the slot moved")
}
