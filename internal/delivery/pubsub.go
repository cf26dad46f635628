package delivery

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Sharded reports whether Herald's notify and jobs channels use sharded pub/sub
// (Redis 7 SPUBLISH / SSUBSCRIBE) on rdb: on a Redis Cluster client they do, so a
// publish goes to the one node owning the channel's slot instead of being
// broadcast over the cluster bus to every node. On one server (single or
// sentinel mode) they use plain PUBLISH / SUBSCRIBE, as always.
func Sharded(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// Publish sends msg on channel through c (a client or a pipeline): SPUBLISH when
// sharded, PUBLISH otherwise.
func Publish(ctx context.Context, c redis.Cmdable, sharded bool, channel, msg string) *redis.IntCmd {
	if sharded {
		return c.SPublish(ctx, channel, msg)
	}
	return c.Publish(ctx, channel, msg)
}

// Subscribe subscribes to channel through rdb: SSUBSCRIBE when Sharded(rdb),
// SUBSCRIBE otherwise. The caller closes the PubSub.
func Subscribe(ctx context.Context, rdb redis.UniversalClient, channel string) *redis.PubSub {
	if Sharded(rdb) {
		return rdb.SSubscribe(ctx, channel)
	}
	return rdb.Subscribe(ctx, channel)
}

// Unsubscribed reports whether m, a message Receive handed over,
// is the server ending a sharded subscription by itself: when a channel's slot
// moves to another node (resharding, a failover) Redis sends SUNSUBSCRIBE, and
// go-redis does not subscribe again. The receiver then calls SlotMoved, closes its
// PubSub and subscribes anew, which finds the slot's new owner.
func Unsubscribed(m any) bool {
	s, ok := m.(*redis.Subscription)
	return ok && s.Kind == "sunsubscribe"
}

// SlotMoved starts a reload of a cluster client's slot map (in the background), so
// a subscription made after Unsubscribed reaches the slot's new owner without
// waiting for the periodic reload; a subscription sent to the old owner meanwhile
// fails with MOVED and go-redis retries it. It does nothing on other clients.
func SlotMoved(rdb redis.UniversalClient) {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		c.ReloadState(context.Background())
	}
}

// Unsubscribe ends ps's subscription to channel (SUNSUBSCRIBE when sharded); the
// confirmation arrives on ps after every message Redis sent before it.
func Unsubscribe(ctx context.Context, ps *redis.PubSub, sharded bool, channel string) error {
	if sharded {
		return ps.SUnsubscribe(ctx, channel)
	}
	return ps.Unsubscribe(ctx, channel)
}
