// Package worker runs delivery jobs, whichever bus.Source carried them: it loads a job's
// messages by offset, cuts them into batches, signs each just before its POST, sends
// at most the job's parallelism at once, classifies each answer and reports per
// message to the owning dispatcher (never per job, so done is per message).
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/aheadcache"
	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/fence"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/internal/webhook"
	"github.com/heraldhq/herald/models"
)

// groupTTL is how long a worker trusts its copy of a group's settings; changes apply
// within this time, so a settings change reaches every worker within 1 s. A copy
// used after half of it is re-read in the background (aheadcache), so a group
// that sends at least every half second never waits for the read: only a copy past
// groupTTL is read on the job's path.
const groupTTL = time.Second

// refreshAfter is how long after the job that found a group's copy past half its TTL
// the background re-read starts: it then runs after that job's POST, not beside it
// on the CPUs and the database. The copy is still served only within groupTTL.
const refreshAfter = 50 * time.Millisecond

// Worker runs delivery jobs. Create it with New and start it with Run.
type Worker struct {
	cfg    config.Worker
	keys   delivery.Keys
	st     Store
	rdb    redis.UniversalClient
	source bus.Source
	client *http.Client
	log    *slog.Logger
	fences *fence.Watcher

	mu     sync.Mutex
	groups *aheadcache.Cache[int64, *cachedGroup] // group settings and signers (group)
	topics map[int64]string
	push   pushSigners

	attempts chan models.DeliveryAttempt
	// stopping is closed when Run's ctx ends: no POST starts after it. asynq does not
	// cancel handler contexts on Shutdown, so handlers watch this instead.
	stopping chan struct{}

	// local hands reports to the dispatcher of this process in memory when the
	// source is the in-process bus (report.go); nil otherwise.
	local *bus.InProcess

	// slots bounds the jobs running here and their open POSTs, whatever carried
	// the jobs (bus.Slots).
	slots bus.Slots

	// senders gather reports to each dispatcher into one XADD.
	senders *bus.ReportSenders
}

// New returns a Worker that runs the jobs d.Source carries, or an error naming a
// missing dependency.
func New(d Deps) (*Worker, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	cfg, keys, st, rdb, src, guard, log := d.Config, d.Keys, d.Store, d.Redis, d.Source, d.Guard, d.Log
	w := &Worker{cfg: cfg, keys: keys, st: st, rdb: rdb, source: src, client: webhook.NewClient(guard), log: log,
		topics: map[int64]string{}, attempts: make(chan models.DeliveryAttempt, 100_000), stopping: make(chan struct{}),
		fences: fence.NewWatcher(rdb, keys), slots: bus.NewSlots(cfg.Concurrency)}
	w.senders = bus.NewReportSenders(rdb, keys, cfg.ReportLinger, w.stopping, log)
	w.local, _ = src.(*bus.InProcess)
	w.groups = aheadcache.New(aheadcache.Options[int64, *cachedGroup]{TTL: groupTTL, RefreshDelay: refreshAfter, Load: w.loadGroup,
		Gone: func(err error) bool { return errors.Is(err, models.ErrNotFound) }})
	return w, nil
}

// Run runs the jobs its source carries until ctx ends. Shutdown order: the source
// takes no more jobs (bus.Source.Stop), no new POST starts (jobs waiting for a slot
// return their messages), POSTs in flight finish within their timeout_ms, each job
// reports what finished and returns the unsent rest (ReasonShutdown) so the
// dispatcher hands only those to another worker; then the buffered attempt rows are
// written.
func (w *Worker) Run(ctx context.Context) error {
	fctx, stopFences := context.WithCancel(context.WithoutCancel(ctx))
	defer stopFences()
	go func() { _ = w.fences.Run(fctx) }()
	select { // announced fences must reach running jobs; job starts read the fence anyway
	case <-w.fences.Ready():
	case <-time.After(2 * time.Second):
		w.log.Warn("fence subscription not confirmed; jobs still check the fence when they start")
	}
	if err := w.source.Start(ctx, w, w.slots); err != nil {
		return err
	}
	actx, stopAttempts := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { w.writeAttempts(actx); close(done) }()
	sweepDone := make(chan struct{})
	go func() { w.sweepDeletedGroups(actx); close(sweepDone) }()
	<-ctx.Done()
	w.source.Stop(func() { close(w.stopping) })
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

// group returns group id's settings and signers from a refresh-ahead cache
// (aheadcache; groupTTL): a group that sends at least every half second never
// waits for the read. Errors are the store's (models.ErrNotFound: deleted).
func (w *Worker) group(ctx context.Context, id int64) (*cachedGroup, error) {
	return w.groups.Get(ctx, id)
}

// loadGroup reads group id and builds its signers (the cache's Load, see group).
func (w *Worker) loadGroup(ctx context.Context, id int64) (*cachedGroup, error) {
	m, err := w.st.GroupGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if m.Unreadable != "" {
		return nil, fmt.Errorf("group %d settings unreadable: %s", id, m.Unreadable)
	}
	g := &cachedGroup{Group: m}
	for _, secret := range m.SigningSecrets(time.Now()) {
		s, err := signing.NewSigner(secret)
		if err != nil {
			return nil, fmt.Errorf("group %d secret: %w", id, err)
		}
		g.signers = append(g.signers, s)
	}
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
