package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// pushChannelSize is go-redis' buffer between the subscription's connection and
// the listener; the listener empties it at once into the worker's own queue, so a
// burst of pushes never waits on a slot (go-redis drops a message it cannot hand
// over within a minute).
const pushChannelSize = 1024

// pushUnsubscribeWait bounds how long a stopping worker waits for its unsubscribe
// to be confirmed, the point after which no push reaches it.
const pushUnsubscribeWait = 2 * time.Second

// pushedJob is a job pushed to this worker (delivery's push stream), waiting for a
// slot.
type pushedJob struct {
	job     delivery.Job
	timeout time.Duration
}

// pushStream is a worker's end of the push stream (delivery/push.go): its id and
// the queue the subscription drains into; pushed jobs run on the worker's slots.
type pushStream struct {
	id      string
	sharded bool
	mu      sync.Mutex
	queue   []pushedJob
	more    chan struct{} // a job was queued (buffer of one)
	jobs    sync.WaitGroup
	ready   chan struct{} // closed once the first subscription is confirmed
}

// newPushStream returns a worker's push stream end with a fresh id
// (`<host>-<8 hex>`).
func newPushStream(rdb redis.UniversalClient) *pushStream {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &pushStream{id: fmt.Sprintf("%s-%s", host, hex.EncodeToString(b[:])), sharded: delivery.Sharded(rdb),
		more: make(chan struct{}, 1), ready: make(chan struct{})}
}

// listenPushed keeps the worker subscribed to its jobs channel and announced in
// Keys.Workers until stop is closed (then stopPushed) or ctx ends. A subscription
// the server ended (a cluster slot moved) or that dropped is made again.
func (w *Worker) listenPushed(ctx context.Context, stop <-chan struct{}) {
	var seq int64
	for ctx.Err() == nil {
		select {
		case <-stop:
			return
		default:
		}
		if w.listenPushedOnce(ctx, stop, &seq) {
			return
		}
	}
}

// listenPushedOnce is one subscription of listenPushed; it reports whether the
// worker stopped taking pushes (stop closed, unsubscribed and unannounced).
func (w *Worker) listenPushedOnce(ctx context.Context, stop <-chan struct{}, seq *int64) bool {
	s := w.stream
	channel := w.keys.WorkerJobs(s.id)
	ps := delivery.Subscribe(ctx, w.rdb, channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // a refused SSUBSCRIBE leaves go-redis subscribed to nothing
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
		return false
	}
	// Announced only while subscribed: a dispatcher that reads the entry finds the
	// channel listened to (or its PUBLISH answers 0 and it falls back to asynq).
	announce := func() {
		*seq++
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		e := delivery.WorkerEntry{Concurrency: w.cfg.Concurrency, Seq: *seq}
		pipe := w.rdb.Pipeline()
		pipe.HSet(actx, w.keys.Workers(), s.id, e.String())
		if *seq%delivery.WorkersExpireEvery == 1 {
			pipe.PExpire(actx, w.keys.Workers(), delivery.WorkersTTL)
		}
		if _, err := pipe.Exec(actx); err != nil {
			w.log.Warn("announce worker for pushed jobs", "err", err)
		}
	}
	announce()
	select {
	case <-s.ready:
	default:
		close(s.ready)
	}
	tick := time.NewTicker(delivery.WorkerRefresh)
	defer tick.Stop()
	ch := ps.ChannelWithSubscriptions(redis.WithChannelSize(pushChannelSize), redis.WithChannelHealthCheckInterval(30*time.Second))
	for {
		select {
		case <-ctx.Done():
			return true
		case <-stop:
			w.stopPushed(ctx, ps, ch, channel)
			return true
		case <-tick.C:
			announce()
		case m, ok := <-ch:
			if !ok {
				return false
			}
			if delivery.Unsubscribed(m) {
				delivery.SlotMoved(w.rdb)
				return false
			}
			w.takePushed(m)
		}
	}
}

// stopPushed ends the subscription and waits for its confirmation, taking every
// push Redis sent before it (a PUBLISH after it answers 0 and goes to asynq), then
// removes the worker's entry so dispatchers stop choosing it. Jobs already pushed
// are finished by the caller; their dispatchers wait for their reports.
func (w *Worker) stopPushed(ctx context.Context, ps *redis.PubSub, ch <-chan any, channel string) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushUnsubscribeWait)
	defer cancel()
	if err := delivery.Unsubscribe(uctx, ps, w.stream.sharded, channel); err != nil {
		w.log.Warn("unsubscribe from pushed jobs", "err", err)
	} else {
	drain:
		for {
			select {
			case m, ok := <-ch:
				if !ok {
					break drain
				}
				if sub, isSub := m.(*redis.Subscription); isSub && (sub.Kind == "unsubscribe" || sub.Kind == "sunsubscribe") {
					break drain
				}
				w.takePushed(m)
			case <-uctx.Done():
				w.log.Warn("unsubscribe from pushed jobs not confirmed; a job pushed meanwhile is re-dispatched at its deadline")
				break drain
			}
		}
	}
	if err := w.rdb.HDel(uctx, w.keys.Workers(), w.stream.id).Err(); err != nil {
		w.log.Warn("remove worker entry", "err", err)
	}
}

// takePushed queues the jobs of a pushed message for the slots.
func (w *Worker) takePushed(m any) {
	msg, ok := m.(*redis.Message)
	if !ok {
		return
	}
	jobs, timeout, errs := delivery.ParsePush([]byte(msg.Payload))
	for _, err := range errs {
		w.log.Error("drop malformed pushed job", "err", err)
	}
	if len(jobs) == 0 {
		return
	}
	s := w.stream
	s.mu.Lock()
	for _, j := range jobs {
		s.queue = append(s.queue, pushedJob{job: j, timeout: timeout})
	}
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

// runPushed starts queued pushed jobs in order, each on one of the worker's slots as
// soon as one is free, and
// bounded by its timeout like an asynq task; it returns once listened is closed and
// the queue is empty (a job started while the worker stops reports its messages
// returned, ReasonShutdown, at once).
func (w *Worker) runPushed(listened <-chan struct{}) {
	s := w.stream
	for {
		s.mu.Lock()
		var next pushedJob
		n := len(s.queue)
		if n > 0 {
			next = s.queue[0]
			s.queue[0] = pushedJob{}
			s.queue = s.queue[1:]
		}
		s.mu.Unlock()
		if n == 0 {
			select {
			case <-s.more:
				continue
			case <-listened:
				s.mu.Lock()
				left := len(s.queue)
				s.mu.Unlock()
				if left == 0 {
					return
				}
				continue
			}
		}
		w.slots <- struct{}{} // a running job gives its slot back within its timeout
		s.jobs.Add(1)
		go func() {
			defer s.jobs.Done()
			ctx, cancel := context.WithTimeout(context.Background(), next.timeout)
			defer cancel()
			w.runHeld(ctx, next.job)
		}()
	}
}
