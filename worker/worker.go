// Package worker is the asynq server that runs delivery jobs: it loads a job's
// messages by offset, cuts them into batches, signs each just before its POST, sends
// at most the job's parallelism at once, classifies each answer and reports per
// message to the owning dispatcher (never per job, so done is per message).
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/fence"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/webhook"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// groupTTL is how long a worker trusts its copy of a group's settings; changes apply
// within this time, so a settings change reaches every worker within 1 s. A copy
// used after half of it is re-read in the background (refreshGroup), so a group
// that sends at least every half second never waits for the read: only a copy past
// groupTTL is read on the job's path.
const groupTTL = time.Second

// refreshAfter is how long after the job that found a group's copy past half its TTL
// the background re-read starts: it then runs after that job's POST, not beside it
// on the CPUs and the database. The copy is still served only within groupTTL.
const refreshAfter = 50 * time.Millisecond

// Worker runs delivery jobs. Create it with New and start it with Run.
type Worker struct {
	cfg      config.Worker
	keys     delivery.Keys
	st       *store.Store
	rdb      redis.UniversalClient
	redisOpt asynq.RedisConnOpt
	client   *http.Client
	log      *slog.Logger
	fences   *fence.Watcher

	mu         sync.Mutex
	groups     map[int64]*cachedGroup
	refreshing map[int64]bool // groups being re-read in the background
	topics     map[int64]string
	push       pushSigners

	attempts chan models.DeliveryAttempt
	// stopping is closed when Run's ctx ends: no POST starts after it. asynq does not
	// cancel handler contexts on Shutdown, so handlers watch this instead.
	stopping chan struct{}

	// local links the worker to the dispatcher of its process (local.go).
	local     *delivery.Local
	localJobs sync.WaitGroup
	stopMu    sync.Mutex // orders closing stopping against localJobs.Add

	// slots bounds the jobs running here and their open POSTs, whatever carried
	// the jobs (slots.go).
	slots slots

	// senders gather reports to each dispatcher into one XADD (reportsend.go).
	senders reportSenders
	// stream is the worker's end of the push stream (push.go).
	stream *pushStream
}

// New returns a Worker. guard decides which endpoint addresses may be dialled.
func New(cfg config.Worker, keys delivery.Keys, st *store.Store, rdb redis.UniversalClient, redisOpt asynq.RedisConnOpt, guard ssrf.Guard, log *slog.Logger) *Worker {
	return &Worker{cfg: cfg, keys: keys, st: st, rdb: rdb, redisOpt: redisOpt, client: webhook.NewClient(guard), log: log,
		groups: map[int64]*cachedGroup{}, refreshing: map[int64]bool{}, topics: map[int64]string{}, attempts: make(chan models.DeliveryAttempt, 100_000), stopping: make(chan struct{}),
		fences: fence.NewWatcher(rdb, keys), stream: newPushStream(rdb), slots: newSlots(cfg.Concurrency)}
}

// Run serves delivery jobs, pushed (push.go) and from asynq, until ctx ends.
// Shutdown order: the push subscription ends and the worker's entry is removed, so
// dispatchers push no more (a push then answers 0 and goes to asynq); no new POST
// starts (jobs being fed stop at once, pushed jobs not started yet return their
// messages), POSTs in flight finish within their timeout_ms, each job
// reports what finished and returns the unsent rest (ReasonShutdown) so the
// dispatcher hands only those to another worker; then asynq stops (its
// ShutdownTimeout, which re-queues a whole job, is only the backstop) and the buffered
// attempt rows are written.
func (w *Worker) Run(ctx context.Context) error {
	// Idle cost: the processor sleeps TaskCheckInterval (default 1 s) between empty
	// polls unless a dispatcher's PUBLISH on Keys.JobsChannel wakes it (the patched
	// Config.Wake, third_party/asynq/HERALD-PATCH.md). Herald schedules no asynq
	// task and keeps no completed one (Retention 0), so the forwarder (a panicking
	// handler's task) and the janitor only cover rare paths and poll slowly.
	wake := make(chan struct{}, 1)
	srv := asynq.NewServer(w.redisOpt, asynq.Config{
		Concurrency:              w.cfg.Concurrency,
		Queues:                   map[string]int{w.keys.AsynqQueue(): 1},
		TaskCheckInterval:        w.cfg.TaskCheckInterval,
		Wake:                     wake,
		ShutdownTimeout:          w.cfg.ShutdownTimeout,
		DelayedTaskCheckInterval: w.cfg.DelayedTaskCheckInterval,
		JanitorInterval:          time.Minute,
		Logger:                   asynqLogger{w.log},
		LogLevel:                 asynq.WarnLevel,
		IsFailure:                func(error) bool { return false },
	})
	fctx, stopFences := context.WithCancel(context.WithoutCancel(ctx))
	defer stopFences()
	go func() { _ = w.fences.Run(fctx) }()
	jctx, stopWake := context.WithCancel(context.WithoutCancel(ctx))
	wakeReady, wakeDone := make(chan struct{}), make(chan struct{})
	go func() { delivery.ListenJobs(jctx, w.rdb, w.keys, wake, wakeReady); close(wakeDone) }()
	defer func() { stopWake(); <-wakeDone }()
	select { // until confirmed, new jobs wait for the next poll
	case <-wakeReady:
	case <-time.After(2 * time.Second):
		w.log.Warn("jobs wake-up subscription not confirmed; new jobs wait for the next poll")
	}
	select { // announced fences must reach running jobs; job starts read the fence anyway
	case <-w.fences.Ready():
	case <-time.After(2 * time.Second):
		w.log.Warn("fence subscription not confirmed; jobs still check the fence when they start")
	}
	pctx, endPush := context.WithCancel(context.WithoutCancel(ctx))
	defer endPush()
	stopPush, listened, pushRunner := make(chan struct{}), make(chan struct{}), make(chan struct{})
	if w.cfg.PushJobs {
		go func() { w.listenPushed(pctx, stopPush); close(listened) }()
		select { // until confirmed, dispatchers do not know this worker and use asynq
		case <-w.stream.ready:
		case <-time.After(2 * time.Second):
			w.log.Warn("pushed jobs subscription not confirmed; jobs come through asynq meanwhile")
		}
	} else {
		close(listened)
	}
	go func() { w.runPushed(listened); close(pushRunner) }()
	mux := asynq.NewServeMux()
	mux.HandleFunc(delivery.TypeDeliver, w.handle)
	mux.HandleFunc(delivery.TypeDeliverPack, w.handlePack)
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	if w.local != nil {
		w.local.AttachWorker(w.runLocal)
	}
	actx, stopAttempts := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { w.writeAttempts(actx); close(done) }()
	sweepDone := make(chan struct{})
	go func() { w.sweepDeletedGroups(actx); close(sweepDone) }()
	<-ctx.Done()
	close(stopPush)
	select {
	case <-listened:
	case <-time.After(pushUnsubscribeWait + time.Second):
		endPush() // Redis does not answer: stop listening anyway
		<-listened
	}
	w.stopMu.Lock()
	close(w.stopping)
	w.stopMu.Unlock()
	if w.local != nil {
		w.local.AttachWorker(nil)
	}
	w.localJobs.Wait()
	<-pushRunner
	w.stream.jobs.Wait()
	srv.Shutdown()
	stopAttempts()
	<-done
	<-sweepDone
	return nil
}

// isStopping reports whether Run's ctx ended.
func (w *Worker) isStopping() bool {
	select {
	case <-w.stopping:
		return true
	default:
		return false
	}
}

func (w *Worker) group(ctx context.Context, id int64) (*cachedGroup, error) {
	w.mu.Lock()
	g := w.groups[id]
	age := time.Duration(-1)
	if g != nil {
		age = time.Since(g.loadedAt)
	}
	refresh := age >= groupTTL/2 && age < groupTTL && !w.refreshing[id]
	if refresh {
		w.refreshing[id] = true
	}
	w.mu.Unlock()
	if refresh {
		base := context.WithoutCancel(ctx)
		time.AfterFunc(refreshAfter, func() { // the job does not wait for it; a failed read leaves the copy to expire
			rctx, cancel := context.WithTimeout(base, groupTTL)
			defer cancel()
			_, _ = w.loadGroup(rctx, id)
			w.mu.Lock()
			delete(w.refreshing, id)
			w.mu.Unlock()
		})
	}
	if age >= 0 && age < groupTTL {
		return g, nil
	}
	return w.loadGroup(ctx, id)
}

// loadGroup reads group id and its signers and caches them unless a copy read later
// is already cached.
func (w *Worker) loadGroup(ctx context.Context, id int64) (*cachedGroup, error) {
	read := time.Now()
	m, err := w.st.GroupGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if m.Unreadable != "" {
		return nil, fmt.Errorf("group %d settings unreadable: %s", id, m.Unreadable)
	}
	g := &cachedGroup{Group: m, loadedAt: read}
	for _, secret := range m.SigningSecrets(time.Now()) {
		s, err := signing.NewSigner(secret)
		if err != nil {
			return nil, fmt.Errorf("group %d secret: %w", id, err)
		}
		g.signers = append(g.signers, s)
	}
	w.mu.Lock()
	if cur := w.groups[id]; cur == nil || !cur.loadedAt.After(read) {
		w.groups[id] = g
	}
	w.mu.Unlock()
	return g, nil
}

func (w *Worker) topic(ctx context.Context, queue int64) string {
	w.mu.Lock()
	t, ok := w.topics[queue]
	w.mu.Unlock()
	if ok {
		return t
	}
	all, err := w.st.QueueTopics(ctx)
	if err != nil {
		return ""
	}
	w.mu.Lock()
	w.topics = all
	w.mu.Unlock()
	return all[queue]
}

type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
