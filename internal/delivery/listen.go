package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ResubscribeDelay is the pause before a subscription the server refused (Redis
// unreachable, a failover under way, MOVED from a cluster node that no longer owns
// the channel's slot) is tried again.
const ResubscribeDelay = 200 * time.Millisecond

// Listener says what Listen does with its subscription.
type Listener struct {
	// Subscribed, if set, is called after each confirmed subscription: the first,
	// one go-redis made again after a reconnect and one Listen made again after a
	// slot moved. Messages published while none stood are lost, so a listener that
	// keeps state from them starts afresh here.
	Subscribed func()
	// Ended, if set, is called when a confirmed subscription ends (the slot moved,
	// the channel closed, ctx ended), before any new one.
	Ended func()
	// Message is called with each message's payload, on Listen's goroutine (the one
	// that reads the subscription's connection); while it runs, later messages wait
	// in the connection's buffers.
	Message func(payload string)
	// Refused, if set, is told why a subscription was refused before it is tried
	// again (after ResubscribeDelay).
	Refused func(err error)
	// Broadcast subscribes with SUBSCRIBE even on a cluster, for a channel that is
	// published with PUBLISH to every node; otherwise Subscribe's choice holds.
	Broadcast bool
	// HealthCheck is the idle time after which Receive checks the subscription with
	// a PING (0: DefaultHealthCheck).
	HealthCheck time.Duration
}

// Listen keeps rdb subscribed to channel until ctx ends, handing what arrives to l:
// it waits for each subscription's confirmation (a refused SSUBSCRIBE would leave
// go-redis subscribed to nothing, never retried) and tries a refused one again
// after ResubscribeDelay; when the server ends a sharded subscription because the
// channel's slot moved (Unsubscribed) it reloads the slot map (SlotMoved) and
// subscribes again at the slot's new owner. It is the one subscription loop of the
// notify, fence and jobs channels.
func Listen(ctx context.Context, rdb redis.UniversalClient, channel string, l Listener) {
	for ctx.Err() == nil {
		err := listenOnce(ctx, rdb, channel, l)
		if err == nil || ctx.Err() != nil {
			continue // the slot moved (or ctx ended): subscribe again at once
		}
		if l.Refused != nil {
			l.Refused(err)
		}
		select {
		case <-time.After(ResubscribeDelay):
		case <-ctx.Done():
		}
	}
}

// SubscribeConfirmed subscribes to channel (SUBSCRIBE when broadcast, else as
// Subscribe chooses) and waits for the server's confirmation; on an error the
// PubSub is closed and nil. The caller closes the PubSub.
func SubscribeConfirmed(ctx context.Context, rdb redis.UniversalClient, channel string, broadcast bool) (*redis.PubSub, error) {
	var ps *redis.PubSub
	if broadcast {
		ps = rdb.Subscribe(ctx, channel)
	} else {
		ps = Subscribe(ctx, rdb, channel)
	}
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, err
	}
	return ps, nil
}

// listenOnce is one subscription of Listen: it returns nil when ctx ended, the
// channel closed or the slot moved, and the error of a refused subscription.
func listenOnce(ctx context.Context, rdb redis.UniversalClient, channel string, l Listener) error {
	ps, err := SubscribeConfirmed(ctx, rdb, channel, l.Broadcast)
	if err != nil {
		return err
	}
	defer ps.Close()
	if l.Ended != nil {
		defer l.Ended()
	}
	if l.Subscribed != nil {
		l.Subscribed()
	}
	moved := false
	err = Receive(ctx, ps, l.HealthCheck, func(m any) bool {
		switch m := m.(type) {
		case *redis.Message:
			l.Message(m.Payload)
		case *redis.Subscription:
			switch {
			case Unsubscribed(m):
				moved = true
				return false
			case (m.Kind == "subscribe" || m.Kind == "ssubscribe") && l.Subscribed != nil:
				l.Subscribed() // made again by go-redis after a reconnect
			}
		}
		return true
	})
	if moved {
		SlotMoved(rdb)
	}
	if errors.Is(err, ErrStale) {
		return nil // subscribe again at once, on a new connection
	}
	return err
}
