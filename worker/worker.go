// Package worker is the asynq server that runs delivery jobs: it loads a job's
// messages by offset, cuts them into batches, signs each just before its POST, sends
// at most the job's parallelism at once, classifies each answer and reports per
// message to the owning dispatcher (DESIGN §5).
package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
	"github.com/heraldhq/herald/worker/task"
)

// groupTTL is how long a worker trusts its copy of a group's settings; changes apply
// within this time (the issue asks for 2 s).
const groupTTL = time.Second

// Worker runs delivery jobs. Create it with New and start it with Run.
type Worker struct {
	cfg       config.Worker
	namespace string
	st        *store.Store
	rdb       redis.UniversalClient
	redisOpt  asynq.RedisClientOpt
	client    *http.Client
	log       *slog.Logger

	mu     sync.Mutex
	groups map[int64]*cachedGroup
	topics map[int64]string
}

// New returns a Worker. guard decides which endpoint addresses may be dialled.
func New(cfg config.Worker, namespace string, st *store.Store, rdb redis.UniversalClient, redisOpt asynq.RedisClientOpt, guard ssrf.Guard, log *slog.Logger) *Worker {
	return &Worker{cfg: cfg, namespace: namespace, st: st, rdb: rdb, redisOpt: redisOpt, client: newClient(guard), log: log,
		groups: map[int64]*cachedGroup{}, topics: map[int64]string{}}
}

// Run serves delivery jobs until ctx ends, then stops taking jobs, lets running POSTs
// finish (up to ShutdownTimeout) and reports the unsent rest as returned.
func (w *Worker) Run(ctx context.Context) error {
	srv := asynq.NewServer(w.redisOpt, asynq.Config{
		Concurrency:              w.cfg.Concurrency,
		Queues:                   map[string]int{task.AsynqQueue(w.namespace): 1},
		TaskCheckInterval:        w.cfg.TaskCheckInterval,
		ShutdownTimeout:          w.cfg.ShutdownTimeout,
		DelayedTaskCheckInterval: time.Second,
		Logger:                   asynqLogger{w.log},
		LogLevel:                 asynq.WarnLevel,
		IsFailure:                func(error) bool { return false },
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(task.TypeDeliver, w.handle)
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	<-ctx.Done()
	srv.Shutdown()
	return nil
}

func (w *Worker) group(ctx context.Context, id int64) (*cachedGroup, error) {
	w.mu.Lock()
	g := w.groups[id]
	w.mu.Unlock()
	if g != nil && time.Since(g.loadedAt) < groupTTL {
		return g, nil
	}
	m, err := w.st.GroupGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	s, err := signing.NewSigner(m.SigningSecret)
	if err != nil {
		return nil, fmt.Errorf("group %d secret: %w", id, err)
	}
	g = &cachedGroup{Group: m, signer: s, loadedAt: time.Now()}
	w.mu.Lock()
	w.groups[id] = g
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

// handle runs one delivery job. It always returns nil: asynq's retry is not used;
// only the dispatcher re-executes a job (DESIGN §2).
func (w *Worker) handle(ctx context.Context, t *asynq.Task) error {
	j, err := task.ParseDeliver(t)
	if err != nil {
		w.log.Error("drop malformed delivery job", "err", err)
		return nil
	}
	rep := newReporter(w, j)
	hbCtx, stopHB := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHB()
	go rep.heartbeat(hbCtx, w.cfg.ProgressInterval)

	offsets := task.Expand(j.Offsets)
	g, err := w.group(ctx, j.Group)
	if err != nil {
		w.log.Warn("load group for job", "group", j.Group, "err", err)
		rep.returned(task.ReasonFailed, offsets, task.Counters{})
		rep.flush(true)
		return nil
	}
	if g.Status != models.GroupRunning {
		rep.returned(task.ReasonPaused, offsets, task.Counters{})
		rep.flush(true)
		return nil
	}
	msgs, err := w.st.MessagesGet(ctx, j.Queue, offsets)
	if err != nil {
		w.log.Warn("load messages for job", "group", j.Group, "queue", j.Queue, "err", err)
		rep.returned(task.ReasonFailed, offsets, task.Counters{})
		rep.flush(true)
		return nil
	}
	if len(msgs) != len(offsets) {
		found := make(map[int64]bool, len(msgs))
		for _, m := range msgs {
			found[m.Offset] = true
		}
		var missing []int64
		for _, o := range offsets {
			if !found[o] {
				missing = append(missing, o)
			}
		}
		w.log.Warn("messages missing from queue table; counted as done", "queue", j.Queue, "count", len(missing))
		rep.delivered(missing, task.Counters{})
	}
	topic := w.topic(ctx, j.Queue)
	batches := splitBatches(msgs, g.BatchSize, g.BatchMaxBytes)
	work := make(chan []models.Message)
	var wg sync.WaitGroup
	p := min(j.Parallelism, len(batches))
	for range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				w.send(ctx, g, topic, j.Attempt, b, rep)
			}
		}()
	}
	i := 0
feed:
	for ; i < len(batches); i++ {
		select {
		case work <- batches[i]:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	for ; i < len(batches); i++ {
		rep.returned(task.ReasonShutdown, offsetsOf(batches[i]), task.Counters{})
	}
	rep.flush(true)
	return nil
}

func (w *Worker) send(ctx context.Context, g *cachedGroup, topic string, attempt int, b []models.Message, rep *reporter) {
	if ctx.Err() != nil {
		rep.returned(task.ReasonShutdown, offsetsOf(b), task.Counters{})
		return
	}
	start := time.Now()
	// A POST already started finishes even during shutdown (asynq's ShutdownTimeout
	// bounds it), so its outcome is known and reported.
	out := w.post(context.WithoutCancel(ctx), g, topic, attempt, b)
	lat := time.Since(start)
	ms := lat.Milliseconds()
	metrics.PostLatency.WithLabelValues(g.Name).Observe(lat.Seconds())
	c := task.Counters{LastStatus: out.Status, LatencySumMS: ms, LatencyMaxMS: ms}
	if out.Kind == KindDelivered {
		c.Successes = 1
		now := time.Now().UnixMilli()
		metrics.Delivered.WithLabelValues(g.Name).Add(float64(len(b)))
		for _, m := range b {
			metrics.EndToEnd.WithLabelValues(g.Name).Observe(float64(now-m.CreatedAt) / 1000)
		}
		rep.delivered(offsetsOf(b), c)
		return
	}
	c.Failures, c.LastError = 1, out.String()
	metrics.Failed.WithLabelValues(g.Name, string(out.Class)).Add(float64(len(b)))
	rep.returned(task.ReasonFailed, offsetsOf(b), c)
}

func offsetsOf(b []models.Message) []int64 {
	out := make([]int64, len(b))
	for i, m := range b {
		out[i] = m.Offset
	}
	return out
}

// reporter accumulates a job's per-message outcomes and pushes them to the owner's
// report list at most every ProgressInterval and once at the end: one Redis write per
// report, never per message.
type reporter struct {
	w      *Worker
	job    task.Job
	taskID string

	mu       sync.Mutex
	sent     []int64
	back     map[task.Reason][]int64
	counters task.Counters
	final    bool
	beating  atomic.Bool // the heartbeat key was written
}

func newReporter(w *Worker, j task.Job) *reporter {
	return &reporter{w: w, job: j, taskID: j.TaskID(), back: map[task.Reason][]int64{}}
}

func (r *reporter) add(c task.Counters) {
	r.counters.Successes += c.Successes
	r.counters.Failures += c.Failures
	if c.LastStatus != 0 || c.LastError != "" {
		r.counters.LastStatus, r.counters.LastError = c.LastStatus, c.LastError
	}
	r.counters.LatencySumMS += c.LatencySumMS
	r.counters.LatencyMaxMS = max(r.counters.LatencyMaxMS, c.LatencyMaxMS)
}

func (r *reporter) delivered(offsets []int64, c task.Counters) {
	r.mu.Lock()
	r.sent = append(r.sent, offsets...)
	r.add(c)
	r.mu.Unlock()
}

func (r *reporter) returned(reason task.Reason, offsets []int64, c task.Counters) {
	r.mu.Lock()
	r.back[reason] = append(r.back[reason], offsets...)
	r.add(c)
	r.mu.Unlock()
}

// flush pushes what accumulated; final marks the job's last report.
func (r *reporter) flush(final bool) {
	r.mu.Lock()
	if r.final || (!final && len(r.sent) == 0 && len(r.back) == 0) {
		r.mu.Unlock()
		return
	}
	rep := task.Report{TaskID: r.taskID, Group: r.job.Group, Queue: r.job.Queue, Version: r.job.Version, Generation: r.job.Generation,
		Delivered: task.Ranges(r.sent), Counters: r.counters, Final: final}
	if len(r.back) > 0 {
		rep.Returned = map[task.Reason][]task.Range{}
		for k, v := range r.back {
			rep.Returned[k] = task.Ranges(v)
		}
	}
	r.sent, r.back, r.counters, r.final = nil, map[task.Reason][]int64{}, task.Counters{}, final
	r.mu.Unlock()
	b, _ := json.Marshal(rep)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pipe := r.w.rdb.Pipeline()
	pipe.RPush(ctx, task.ReportsKey(r.w.namespace, r.job.Owner), b)
	if final && r.beating.Load() {
		pipe.Del(ctx, task.HeartbeatKey(r.w.namespace, r.taskID))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		// The dispatcher re-dispatches jobs whose reports never arrive: a duplicate, never a loss.
		r.w.log.Warn("push report", "task", r.taskID, "err", err)
	}
}

// heartbeat flushes progress every interval and, from a third of HeartbeatTTL on,
// keeps the job's heartbeat key alive, until ctx ends. Short jobs never write the
// key: the dispatcher's deadline (≥ JobDeadlineBase) covers them.
func (r *reporter) heartbeat(ctx context.Context, interval time.Duration) {
	key := task.HeartbeatKey(r.w.namespace, r.taskID)
	ttl := r.w.cfg.HeartbeatTTL
	progress := time.NewTicker(interval)
	defer progress.Stop()
	beat := time.NewTicker(ttl / 3)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-progress.C:
			r.flush(false)
		case <-beat.C:
			r.beating.Store(true)
			r.w.rdb.Set(ctx, key, 1, ttl)
		}
	}
}

type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
