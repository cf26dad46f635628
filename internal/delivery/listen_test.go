package delivery_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestListenResubscribes listens on a channel of the test Redis, then kills its own
// subscriber connection (found by its client name): Listen must report a second
// confirmed subscription, so its user knows messages may have been lost, and go on
// delivering messages in order.
func TestListenResubscribes(t *testing.T) {
	t.Parallel()
	name := testdb.RandomName("listen-")
	rdb := redis.NewClient(&redis.Options{Addr: testdb.RedisAddr(), ClientName: name})
	t.Cleanup(func() { _ = rdb.Close() })
	pub := redis.NewClient(&redis.Options{Addr: testdb.RedisAddr()})
	t.Cleanup(func() { _ = pub.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	channel := name + ":ch"

	var mu sync.Mutex
	var got []string
	subscribed := make(chan struct{}, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		delivery.Listen(ctx, rdb, channel, delivery.Listener{
			Subscribed: func() { subscribed <- struct{}{} },
			Message: func(p string) {
				mu.Lock()
				got = append(got, p)
				mu.Unlock()
			}})
	}()
	t.Cleanup(func() { cancel(); <-done })
	received := func(want ...string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return strings.Join(got, ",") == strings.Join(want, ",")
		}
	}

	<-subscribed
	require.NoError(t, pub.Publish(ctx, channel, "a").Err())
	require.Eventually(t, received("a"), 5*time.Second, 5*time.Millisecond)

	// Kill the subscriber's connection (ours alone: it carries our client name).
	list, err := pub.ClientList(ctx).Result()
	require.NoError(t, err)
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") || !strings.Contains(line, "subscribe") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				require.NoError(t, pub.Do(ctx, "CLIENT", "KILL", "ID", id).Err())
				killed++
			}
		}
	}
	require.Equal(t, 1, killed, "one subscriber connection of ours")
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		t.Fatal("no second subscription after the connection was killed")
	}
	require.NoError(t, pub.Publish(ctx, channel, "b").Err())
	require.Eventually(t, received("a", "b"), 5*time.Second, 5*time.Millisecond)
}
