// Package notify carries wake-ups over Redis pub/sub: the api publishes a queue id
// after each flush that touched it, and "g<id>" after a group change; dispatchers
// subscribe. A dispatcher publishes "d" after a dead-letter report, which wakes the
// maintenance role's outbox; the outbox publishes the dead-letter queues it appended
// to. A dispatcher publishes "m" when it joins, comes back after its lease may have
// lapsed, or leaves, so the others re-read the live set at once. Notifications are
// hints: a lost one costs at most the fallback poll (queues) or the dispatchers'
// rebalance sweep (groups, membership).
package notify

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// Event is one wake-up: Queue > 0 after a publish, Group > 0 after a group change,
// DeadLetters after dead letters were written, Dispatchers after the set of live
// dispatchers changed.
type Event struct {
	Queue       int64
	Group       int64
	DeadLetters bool
	Dispatchers bool
}

// Payloads of the DeadLetters and Dispatchers events. Receivers that predate them
// read them as queue 0 and ignore them.
const (
	deadLettersPayload = "d"
	dispatchersPayload = "m"
)

// Notifier publishes events on the namespace's channel (delivery.Keys.NotifyChannel).
type Notifier struct {
	rdb     redis.UniversalClient
	channel string
}

// New returns a Notifier publishing on keys' notify channel.
func New(rdb redis.UniversalClient, keys delivery.Keys) *Notifier {
	return &Notifier{rdb: rdb, channel: keys.NotifyChannel()}
}

// Queues publishes one notification per queue id, pipelined in one round trip.
func (n *Notifier) Queues(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	pipe := n.rdb.Pipeline()
	for _, id := range ids {
		pipe.Publish(ctx, n.channel, strconv.FormatInt(id, 10))
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Group publishes a group-change notification.
func (n *Notifier) Group(ctx context.Context, id int64) error {
	return n.rdb.Publish(ctx, n.channel, "g"+strconv.FormatInt(id, 10)).Err()
}

// Groups publishes one group-change notification per id, pipelined in one round trip
// (a dispatcher that released groups tells their new owners).
func (n *Notifier) Groups(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	pipe := n.rdb.Pipeline()
	for _, id := range ids {
		pipe.Publish(ctx, n.channel, "g"+strconv.FormatInt(id, 10))
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Dispatchers publishes that the set of live dispatchers changed (a join, a return
// after a possible lapse, a leave).
func (n *Notifier) Dispatchers(ctx context.Context) error {
	return n.rdb.Publish(ctx, n.channel, dispatchersPayload).Err()
}

// DeadLetters publishes that new dead letters wait for the outbox.
func (n *Notifier) DeadLetters(ctx context.Context) error {
	return n.rdb.Publish(ctx, n.channel, deadLettersPayload).Err()
}

// Subscribe delivers events to out until ctx ends. Events that find out full are
// coalesced by the receiver's own state, so out may be small.
func Subscribe(ctx context.Context, rdb redis.UniversalClient, keys delivery.Keys, out chan<- Event) error {
	sub := rdb.Subscribe(ctx, keys.NotifyChannel())
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		return err
	}
	ch := sub.Channel(redis.WithChannelSize(1024))
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			var ev Event
			g, isGroup := strings.CutPrefix(m.Payload, "g")
			switch {
			case m.Payload == deadLettersPayload:
				ev.DeadLetters = true
			case m.Payload == dispatchersPayload:
				ev.Dispatchers = true
			case isGroup:
				ev.Group, _ = strconv.ParseInt(g, 10, 64)
			default:
				ev.Queue, _ = strconv.ParseInt(m.Payload, 10, 64)
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return nil
			}
		}
	}
}
