package bus

import (
	"context"
	"github.com/heraldhq/herald/internal/delivery"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// wakeTimeout bounds one wake-up PUBLISH. A wake-up that fails is only late: workers
// still poll every config.Worker.TaskCheckInterval.
const wakeTimeout = time.Second

// listenHealthCheck is how long the jobs subscription may stay silent before go-redis
// PINGs it (its default, 3 s, would be a third of a command per second at idle). A
// connection that died silently costs only wake-ups, which the poll covers.
const listenHealthCheck = 30 * time.Second

// JobsWaker tells idle workers that delivery jobs were enqueued: one empty PUBLISH on
// Keys.JobsChannel (SPUBLISH on a cluster, see Sharded), sent from a goroutine so the
// caller never waits for Redis. Pokes
// that arrive before a pending PUBLISH went out share it, so a burst of enqueues
// costs one or a few PUBLISHes, never more than one per poke. Because the PUBLISH is
// sent after the poke that asked for it, a worker woken by it finds every job
// enqueued before that poke. Safe for concurrent use.
type JobsWaker struct {
	rdb     redis.UniversalClient
	channel string
	sharded bool
	pending atomic.Bool
	sent    atomic.Int64
}

// NewJobsWaker returns a JobsWaker publishing on keys.JobsChannel through rdb.
func NewJobsWaker(rdb redis.UniversalClient, keys delivery.Keys) *JobsWaker {
	return &JobsWaker{rdb: rdb, channel: keys.JobsChannel(), sharded: delivery.Sharded(rdb)}
}

// Poke asks for a wake-up PUBLISH after the jobs the caller has enqueued; it never
// blocks. Call it after the enqueue returned.
func (w *JobsWaker) Poke() {
	if w.pending.Swap(true) {
		return // the pending PUBLISH has not started yet and covers this poke
	}
	go w.publish()
}

// Sent reports how many wake-up PUBLISHes were attempted.
func (w *JobsWaker) Sent() int64 { return w.sent.Load() }

func (w *JobsWaker) publish() {
	w.pending.Store(false) // pokes from here on need a PUBLISH of their own
	w.sent.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), wakeTimeout)
	defer cancel()
	_ = delivery.Publish(ctx, w.rdb, w.sharded, w.channel, "").Err()
}

// ListenJobs subscribes to keys.JobsChannel (delivery.Listen: SSUBSCRIBE on a
// cluster, subscribed again after a refusal or a slot move) and, for every message
// and every confirmed subscription (a reconnect may have missed messages), makes a
// non-blocking send on wake, which should have a buffer of one (the asynq server's
// Config.Wake). It returns when ctx ends; ready, if not nil, is closed once the
// first subscription is confirmed.
func ListenJobs(ctx context.Context, rdb redis.UniversalClient, keys delivery.Keys, wake chan<- struct{}, ready chan<- struct{}) {
	poke := func() {
		select {
		case wake <- struct{}{}:
		default: // a wake-up is already waiting
		}
	}
	delivery.Listen(ctx, rdb, keys.JobsChannel(), delivery.Listener{HealthCheck: listenHealthCheck,
		Subscribed: func() {
			if ready != nil {
				close(ready)
				ready = nil
			}
			poke() // jobs may have been enqueued while no subscription stood
		},
		Message: func(string) { poke() }})
}
