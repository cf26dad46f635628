package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
)

// TestNotifyCluster checks notifications on a real Redis Cluster: Subscribe uses
// SSUBSCRIBE at the notify channel's slot owner, and pipelined and single
// publishes (SPUBLISH) arrive in order.
func TestNotifyCluster(t *testing.T) {
	t.Parallel()
	cluster := heraldtest.StartRedisCluster(t)
	rdb := cluster.Client()
	keys := delivery.Keys{Namespace: heraldtest.RandomName("t"), HashTags: true}
	ctx, cancel := context.WithCancel(context.Background())
	events, done := make(chan notify.Event, 16), make(chan struct{})
	go func() { defer close(done); notify.Subscribe(ctx, rdb, keys, events, nil) }()
	defer func() { cancel(); <-done }()
	ch := keys.NotifyChannel()
	owner := cluster.Master(cluster.Slot(ch)).Client(t)
	require.Eventually(t, func() bool { return owner.PubSubShardNumSub(ctx, ch).Val()[ch] == 1 }, 5*time.Second, 10*time.Millisecond,
		"one sharded subscriber at the slot's owner")

	n := notify.New(rdb, keys)
	require.NoError(t, n.Queues(ctx, []int64{7, 8}))
	require.NoError(t, n.Group(ctx, 3))
	for _, want := range []notify.Event{{Queue: 7}, {Queue: 8}, {Group: 3}} {
		select {
		case ev := <-events:
			require.Equal(t, want, ev)
		case <-time.After(5 * time.Second):
			t.Fatalf("notification %+v did not arrive", want)
		}
	}
}
