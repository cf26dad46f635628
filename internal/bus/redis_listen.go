package bus

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// listenPushed keeps the worker subscribed to its jobs channel and announced in
// Keys.Workers until stop is closed (then stopPushed) or ctx ends. A subscription
// the server ended (a cluster slot moved) or that dropped is made again.
func (s *RedisSource) listenPushed(ctx context.Context) {
	stop := s.stopPush
	var seq int64
	for ctx.Err() == nil {
		select {
		case <-stop:
			return
		default:
		}
		if s.listenPushedOnce(ctx, stop, &seq) {
			return
		}
	}
}

// listenPushedOnce is one subscription of listenPushed; it reports whether the
// worker stopped taking pushes (stop closed, unsubscribed and unannounced).
func (s *RedisSource) listenPushedOnce(ctx context.Context, stop <-chan struct{}, seq *int64) bool {
	channel := s.keys.WorkerJobs(s.id)
	// Its own loop, not delivery.Listen: it announces the worker while subscribed
	// and, on stop, unsubscribes and takes every push sent before the confirmation.
	ps, err := delivery.SubscribeConfirmed(ctx, s.rdb, channel, false)
	if err != nil {
		select {
		case <-time.After(delivery.ResubscribeDelay):
		case <-ctx.Done():
		}
		return false
	}
	defer ps.Close()
	// Announced only while subscribed: a dispatcher that reads the entry finds the
	// channel listened to (or its PUBLISH answers 0 and it falls back to asynq).
	announce := func() bool {
		*seq++
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		e := WorkerEntry{Concurrency: s.cfg.Concurrency, Seq: *seq}
		pipe := s.rdb.Pipeline()
		pipe.HSet(actx, s.keys.Workers(), s.id, e.String())
		if *seq%WorkersExpireEvery == 1 {
			pipe.PExpire(actx, s.keys.Workers(), WorkersTTL)
		}
		if _, err := pipe.Exec(actx); err != nil {
			s.log.Warn("announce worker for pushed jobs", "err", err)
			return false
		}
		s.lease.renew()
		return true
	}
	announced := announce()
	select {
	case <-s.ready:
	default:
		close(s.ready)
	}
	// While the loop below reads the subscription, one goroutine announces the
	// worker every WorkerRefresh (WorkerRetry after a failed announce) and another
	// unsubscribes when stop closes.
	sub, endSub := context.WithCancel(ctx)
	var helpers sync.WaitGroup
	defer helpers.Wait()
	defer endSub()
	helpers.Go(func() {
		for {
			wait := WorkerRefresh
			if !announced {
				wait = WorkerRetry
			}
			select {
			case <-sub.Done():
				return
			case <-time.After(wait):
				announced = announce()
			}
		}
	})
	var stopping atomic.Bool
	helpers.Go(func() {
		select {
		case <-sub.Done():
		case <-stop:
			stopping.Store(true)
			s.unsubscribePushed(sub, ps, channel)
		}
	})
	moved, confirmed := false, false
	err = delivery.Receive(ctx, ps, pushHealthCheck, func(m any) bool {
		if conf, ok := m.(*redis.Subscription); ok {
			switch {
			case stopping.Load() && (conf.Kind == "unsubscribe" || conf.Kind == "sunsubscribe"):
				confirmed = true
				return false
			case delivery.Unsubscribed(m):
				moved = true
				return false
			}
		}
		s.takePushed(m)
		return true
	})
	endSub()
	helpers.Wait() // no announce after forget
	switch {
	case stopping.Load():
		if !confirmed {
			s.log.Warn("unsubscribe from pushed jobs not confirmed; a job pushed meanwhile is re-dispatched at its deadline")
		}
		s.forget(ctx)
		return true
	case moved:
		delivery.SlotMoved(s.rdb)
	case ctx.Err() != nil:
		return true
	}
	if err != nil {
		s.log.Warn("pushed jobs subscription stale; subscribing again", "err", err)
	}
	return false
}

// unsubscribePushed ends the subscription to channel; Redis confirms it after every
// push it sent before (a PUBLISH after it answers 0 and goes to asynq), and the
// reading loop takes those pushes and ends at the confirmation. Without one within
// pushUnsubscribeWait it closes ps, which ends the loop.
func (s *RedisSource) unsubscribePushed(ctx context.Context, ps *redis.PubSub, channel string) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushUnsubscribeWait)
	defer cancel()
	if err := delivery.Unsubscribe(uctx, ps, delivery.Sharded(s.rdb), channel); err != nil {
		s.log.Warn("unsubscribe from pushed jobs", "err", err)
		_ = ps.Close()
		return
	}
	select {
	case <-ctx.Done(): // the loop ended
	case <-uctx.Done():
		_ = ps.Close()
	}
}

// forget removes the worker's entry so dispatchers stop choosing it. Jobs already
// pushed are finished by the caller; their dispatchers wait for their reports.
func (s *RedisSource) forget(ctx context.Context) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushUnsubscribeWait)
	defer cancel()
	if err := s.rdb.HDel(fctx, s.keys.Workers(), s.id).Err(); err != nil {
		s.log.Warn("remove worker entry", "err", err)
	}
}

// takePushed queues the jobs of a pushed message for the slots.
func (s *RedisSource) takePushed(m any) {
	msg, ok := m.(*redis.Message)
	if !ok {
		return
	}
	jobs, timeout, errs := ParsePush([]byte(msg.Payload))
	for _, err := range errs {
		s.log.Error("drop malformed pushed job", "err", err)
	}
	if len(jobs) == 0 {
		return
	}
	q := make([]queued, len(jobs))
	for i, j := range jobs {
		q[i] = queued{job: j, timeout: timeout, done: s.beat(j), hold: s.lease.take()}
	}
	if !s.q.add(q...) {
		for _, j := range q {
			j.done()
		}
		s.log.Warn("pushed jobs arrived after the worker stopped; they are sent again at their deadline", "jobs", len(jobs))
	}
}
