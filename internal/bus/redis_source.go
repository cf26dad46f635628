package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
)

// pushHealthCheck is how long the push subscription may stay silent before the
// worker checks it with a PING (delivery.Receive); a worker's pushes arrive on it
// only while a dispatcher has work for it.
const pushHealthCheck = 30 * time.Second

// pushUnsubscribeWait bounds how long a stopping worker waits for its unsubscribe
// to be confirmed, the point after which no push reaches it.
const pushUnsubscribeWait = 2 * time.Second

// subscribeWait bounds how long Start waits for a subscription's confirmation
// before it goes on (jobs then wait for asynq's next poll, or go through asynq).
const subscribeWait = 2 * time.Second

// RedisSource is a worker's end of the Redis bus: the jobs pushed to it on its own
// channel (Keys.WorkerJobs, announced in Keys.Workers while subscribed; cfg.PushJobs)
// and the jobs of the asynq queue, all run on the worker's one Slots, each with its
// heartbeat key kept alive from the moment the worker holds it until it returned
// (heartbeat.go). A pushed job is sent only while the worker's announces go
// through (its lease, lease.go): once dispatchers may have counted the worker dead
// and sent the job elsewhere, Lapsed tells the worker to return it. Create it with
// NewRedisSource.
type RedisSource struct {
	cfg  config.Worker
	rdb  redis.UniversalClient
	opt  asynq.RedisConnOpt
	keys delivery.Keys
	log  *slog.Logger
	id   string // the push channel's worker id, `<host>-<8 hex>`

	q        *runQueue // pushed jobs waiting for a slot
	srv      *asynq.Server
	stopTake chan struct{} // closed by Stop: asynq handlers waiting for a slot give up
	stopPush chan struct{} // closed by Stop: unsubscribe and unannounce
	listened chan struct{} // closed when the push listener returned
	endPush  context.CancelFunc
	endWake  context.CancelFunc
	waked    chan struct{} // closed when the wake-up listener returned
	ready    chan struct{} // closed once the push subscription is first confirmed
	// lease is renewed by each announce that goes through; a pushed job is not sent
	// once it lapsed (lease.go).
	lease *lease
}

// NewRedisSource returns a worker's end of the Redis bus on rdb and asynq's
// connection opt (the same server or cluster).
func NewRedisSource(cfg config.Worker, rdb redis.UniversalClient, opt asynq.RedisConnOpt, keys delivery.Keys, log *slog.Logger) *RedisSource {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &RedisSource{cfg: cfg, rdb: rdb, opt: opt, keys: keys, log: log, id: fmt.Sprintf("%s-%s", host, hex.EncodeToString(b[:])),
		q: newRunQueue(), stopTake: make(chan struct{}), stopPush: make(chan struct{}), listened: make(chan struct{}),
		waked: make(chan struct{}), ready: make(chan struct{}), lease: newLease()}
}

// ID is the worker's id on the push stream.
func (s *RedisSource) ID() string { return s.id }

// Start subscribes to the jobs wake-up channel and the worker's push channel
// (waiting up to 2 s for each confirmation), then starts the asynq server.
//
// Idle cost: the asynq processor sleeps TaskCheckInterval (default 1 s) between
// empty polls unless a dispatcher's PUBLISH on Keys.JobsChannel wakes it (the
// patched Config.Wake, third_party/asynq/HERALD-PATCH.md). Herald schedules no
// asynq task and keeps no completed one (Retention 0), so the forwarder (a
// panicking handler's task) and the janitor only cover rare paths and poll slowly.
func (s *RedisSource) Start(ctx context.Context, r Runner, slots Slots) error {
	wake := make(chan struct{}, 1)
	s.srv = asynq.NewServer(s.opt, asynq.Config{
		Concurrency:              s.cfg.Concurrency,
		Queues:                   map[string]int{s.keys.AsynqQueue(): 1},
		TaskCheckInterval:        s.cfg.TaskCheckInterval,
		Wake:                     wake,
		ShutdownTimeout:          s.cfg.ShutdownTimeout,
		DelayedTaskCheckInterval: s.cfg.DelayedTaskCheckInterval,
		JanitorInterval:          time.Minute,
		Logger:                   asynqLogger{s.log},
		LogLevel:                 asynq.WarnLevel,
		IsFailure:                func(error) bool { return false },
	})
	wctx, endWake := context.WithCancel(context.WithoutCancel(ctx))
	s.endWake = endWake
	wakeReady := make(chan struct{})
	go func() { ListenJobs(wctx, s.rdb, s.keys, wake, wakeReady); close(s.waked) }()
	select { // until confirmed, new jobs wait for the next poll
	case <-wakeReady:
	case <-time.After(subscribeWait):
		s.log.Warn("jobs wake-up subscription not confirmed; new jobs wait for the next poll")
	}
	pctx, endPush := context.WithCancel(context.WithoutCancel(ctx))
	s.endPush = endPush
	if s.cfg.PushJobs {
		go func() { s.listenPushed(pctx); close(s.listened) }()
		select { // until confirmed, dispatchers do not know this worker and use asynq
		case <-s.ready:
		case <-time.After(subscribeWait):
			s.log.Warn("pushed jobs subscription not confirmed; jobs come through asynq meanwhile")
		}
	} else {
		close(s.listened)
	}
	go s.q.serve(r, slots)
	mux := asynq.NewServeMux()
	mux.HandleFunc(TypeDeliver, func(ctx context.Context, t *asynq.Task) error {
		j, err := ParseDeliver(t)
		if err != nil {
			s.log.Error("drop malformed delivery job", "err", err)
			return nil
		}
		s.runTask(ctx, r, slots, j)
		return nil
	})
	mux.HandleFunc(TypeDeliverPack, func(ctx context.Context, t *asynq.Task) error {
		jobs, errs := ParseDeliverPack(t)
		for _, err := range errs {
			s.log.Error("drop malformed delivery job", "err", err)
		}
		var wg sync.WaitGroup
		for _, j := range jobs {
			wg.Go(func() { s.runTask(ctx, r, slots, j) })
		}
		wg.Wait()
		return nil
	})
	if err := s.srv.Start(mux); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	return nil
}

// runTask runs one job asynq carried on a slot, waiting for one; a job whose task
// context ends, or whose worker stops, before a slot is free is returned. The
// handler always returns nil: asynq's retry is not used; only the dispatcher
// re-executes a job, as its next generation.
func (s *RedisSource) runTask(ctx context.Context, r Runner, slots Slots, j delivery.Job) {
	defer s.beat(j)()
	if !slots.Take(ctx, s.stopTake) {
		r.ReturnJob(j)
		return
	}
	defer slots.Give()
	r.RunJob(ctx, j)
}

// Stop ends the push subscription and removes the worker's entry, so dispatchers
// push no more (a push then answers 0 and goes to asynq); calls halt; returns the
// jobs waiting for a slot; waits for running jobs (POSTs in flight finish within
// their timeout_ms and each job reports what finished and returns the rest); then
// stops asynq (its ShutdownTimeout, which re-queues a whole job, is only the
// backstop) and the wake-up listener.
func (s *RedisSource) Stop(halt func()) {
	close(s.stopPush)
	select {
	case <-s.listened:
	case <-time.After(pushUnsubscribeWait + time.Second):
		s.endPush() // Redis does not answer: stop listening anyway
		<-s.listened
	}
	s.q.freeze()
	halt()
	close(s.stopTake)
	s.q.halt()
	if s.srv != nil {
		s.srv.Shutdown()
	}
	s.endWake()
	<-s.waked
	s.endPush()
}

// beat keeps j's heartbeat key alive until the returned stop is called (beat).
func (s *RedisSource) beat(j delivery.Job) (stop func()) {
	return beat(s.rdb, s.keys, s.cfg.HeartbeatTTL, j)
}

type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }

var _ Source = (*RedisSource)(nil)
