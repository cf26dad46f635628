// Package dispatcher owns consumer groups' cursors: it holds leases on them, reads
// queue tables once per queue for all the cursors it owns there, tracks holes, cuts
// delivery jobs under each group's rate and in-flight credits, hands them to the
// delivery bus (internal/bus), applies the workers' reports and commits cursors
// fenced by version and owner.
//
// Everything runs on one goroutine (Run's loop) except the notify subscriber and the
// report popper, which feed it through channels; the state needs no locks.
package dispatcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// Clock returns the current time; tests inject their own.
type Clock func() time.Time

// groupState is an owned group: its settings, credits, pace, failure counters and
// breaker (see health.go).
type groupState struct {
	g         *models.Group
	inflightP int // sum of parallelism over in-flight jobs, first deliveries and retries (≤ MaxInFlight)
	pace      *pacer
	turns     rotation // whose turn it is among the cursors and the retry topic
	busy      int      // flows with work at the start of this step's cut
	cursors   []*cursorState
	lastError string
	// retryThrottles counts, per (queue, offset) of a retry row, its POSTs throttled
	// in a row (delivery.ThrottleLimit); kept in memory, so a new owner counts afresh.
	retryThrottles map[[2]int64]int
	health         health   // failure counters, breaker, throttle and retry due time
	post           postTime // recent mean POST time, which bounds a job's length (jobTurn)
	// leaving, when set, is when this group, which a rebalance gave to another
	// dispatcher, is released even with jobs still in flight (releaseOrLeave);
	// until then it cuts nothing.
	leaving time.Time
	// probeFresh says the probe being cut (cutProbe's first pass) may not be a
	// blocked key's POST retried in place.
	probeFresh bool
}

// configure takes g's settings: a new config version (or the first) rebuilds the
// pacer and clears the retry due time. It reports whether the settings changed, so
// the caller re-reads the group's queues.
func (gs *groupState) configure(g *models.Group, now time.Time) bool {
	changed := gs.g.ConfigVersion != g.ConfigVersion || gs.pace == nil
	gs.g = g
	if !changed {
		return false
	}
	if gs.pace == nil {
		gs.pace = newPacer(g.RateLimit, g.BatchSize, now)
	} else {
		gs.pace.configure(g.RateLimit, g.BatchSize, now)
	}
	gs.health.nextRetry = time.Time{}
	return true
}

// Dispatcher is one dispatcher process. Create it with New and start it with Run.
type Dispatcher struct {
	cfg      config.Dispatcher
	keys     delivery.Keys
	id       string
	st       *store.Store
	sched    scheduleStore // st as the cut, retry claims and commits see it
	rdb      redis.UniversalClient
	notifier *notify.Notifier
	bus      bus.Jobs // where jobs go and whether one is still held (internal/bus)
	// leaving names the groups waiting for their POSTs before their release
	// (leaving.go).
	leaving map[int64]struct{}
	orders  *orders // the ordering modes' orderers (order.go)
	health  *healthKeeper
	streams *bus.ReportStreams
	log     *slog.Logger
	now     Clock

	// localEvents carries the api's notifications of this process (notified.go).
	localEvents chan notify.Event
	overflow    atomic.Bool // a local notification found localEvents full
	running     atomic.Bool // the loop serves localEvents
	pace        reportPace  // the report reader's pause after a read

	groups  map[int64]*groupState
	events  opEvents               // rate-limit gates of operational events
	cursors map[int64]*cursorState // by cursor id
	byGQ    map[[2]int64]*cursorState
	reader  *queueReader // reads the owned cursors' queues (read.go)
	// movesTo lists, by new queue, the unretired moves into it (movehold.go), read
	// after the cursors on every adopt, so a new queue's cursor is never served
	// without the moves that created it.
	movesTo   map[int64][]models.QueueMove
	jobs      map[string]*jobState
	takeovers *takeovers // cursors held until their previous owner's reports are applied
	// Ownership (ownership.go, membership.go): refresh asks for a full rebalance at
	// the next step, reload names groups to re-read alone (group notifications, lost
	// fences), members is the view of the live dispatchers and this one's lease
	// (membership.go) and retry the ownership work to try again later.
	refresh bool
	reload  map[int64]bool
	members *members
	retry   ownRetry
	// reported says a report was applied since the last commit; lastCommit is when
	// that commit ran (commitReported spaces report-driven commits by ReportCommitDelay).
	reported   bool
	lastCommit time.Time
	// reportLog is the read part of this dispatcher's report stream not yet trimmed.
	reportLog reportLog
	wakeAt    time.Time
	// outboxDue asks the next poll to wake the maintenance role's dead-letter outbox.
	outboxDue bool
	claimSeq  int64
	// metrics are the per-group series this dispatcher exports (metrics.go).
	metrics ownerMetrics
	// unsettled says ownership work ran since the last OwnershipSettled signal.
	unsettled bool

	// TestSignals are for tests only; see Init.
	TestSignals TestSignals

	// unreadable maps a group id to the config version logged as unreadable (readable).
	unreadable map[int64]int64
}

// New returns a Dispatcher with a fresh random id that sends its jobs on p.Jobs, or
// an error naming a missing dependency.
func New(p Deps) (*Dispatcher, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	cfg, keys, st, rdb, jobs, log, now := p.Config, p.Keys, p.Store, p.Redis, p.Jobs, p.Log, p.Now
	if now == nil {
		now = time.Now
	}
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	id := fmt.Sprintf("%s-%s", host, hex.EncodeToString(b[:]))
	notifier := notify.New(rdb, keys)
	sd := st.Sides()
	d := &Dispatcher{
		cfg: cfg, keys: keys, id: id,
		members: &members{id: id, st: st, notifier: notifier, cfg: cfg, log: log, lapsed: make(chan struct{}, 1)},
		events:  opEvents{st: st, notifier: notifier, log: log, now: now},
		st:      st, sched: sd, rdb: rdb, notifier: notifier, bus: jobs, streams: bus.NewReportStreams(rdb, log), log: log, now: now,
		groups: map[int64]*groupState{}, cursors: map[int64]*cursorState{},
		byGQ: map[[2]int64]*cursorState{}, jobs: map[string]*jobState{},
		metrics: ownerMetrics{st: st, log: log, now: now}, reload: map[int64]bool{},
		claimSeq:    now().UnixNano() / int64(time.Millisecond),
		localEvents: make(chan notify.Event, localEventsBuffer),
	}
	d.orders = newOrders(orderBase{host: d, owner: id, cfg: cfg, st: sd, log: log, now: now}, sd, &d.events)
	d.metrics.blockedKeys = d.orders.key.blockedKeys
	d.reader = newQueueReader(sd, cfg, log, now, d.wakeBy)
	d.takeovers = &takeovers{held: map[*cursorState]struct{}{}, streams: d.streams, keys: keys, orders: d.orders, reader: d.reader, log: log, now: now, wakeBy: d.wakeBy,
		jobs: d.bus, self: d.id}
	d.health = &healthKeeper{st: sd, rdb: rdb, keys: keys, events: &d.events, log: log, now: now, actor: "dispatcher:" + id, disableAfter: cfg.DisableAfter, wakeBy: d.wakeBy}
	return d, nil
}

// ID is this dispatcher's id in the dispatchers table and its report stream's name.
func (d *Dispatcher) ID() string { return d.id }

// Run dispatches until ctx ends. Shutdown order: stop cutting jobs and heartbeats,
// commit every cursor, release the cursors and delete the dispatcher row so a
// successor claims them at once; jobs in flight are re-dispatched by that successor
// from the commit.
func (d *Dispatcher) Run(ctx context.Context) error {
	defer func() { _ = d.bus.Close() }()
	events := make(chan notify.Event, 1024)
	reports := make(chan delivery.Report, 1024)
	d.bus.Attach(d.id, reports)
	entries := make(chan bus.ReportEntry, 256)
	eg, ectx := errgroup.WithContext(ctx)
	eg.Go(func() error { return d.subscribe(ectx, events) })
	eg.Go(func() error { d.streams.Read(ectx, d.keys.Reports(d.id), entries, d.pace.wait); return nil })
	bctx, stopBeat := context.WithCancel(ectx)
	beaten := make(chan struct{})
	go func() { d.members.beat(bctx); close(beaten) }()
	eg.Go(func() error {
		defer d.shutdown(reports, entries)
		defer func() { stopBeat(); <-beaten }() // no heartbeat may land after the row is deleted
		return d.loop(ectx, events, reports, entries)
	})
	return eg.Wait()
}

func (d *Dispatcher) subscribe(ctx context.Context, events chan<- notify.Event) error {
	notify.Subscribe(ctx, d.rdb, d.keys, events, func(err error) {
		d.log.Warn("notify subscription refused; fallback poll covers it", "err", err)
	})
	return nil
}

// loopTimers are the loop's timers: the sweep (RebalanceInterval), commits
// (CommitInterval), the poll (PollInterval), the next read of the live set (armed
// by arm) and the loop's own wake-up (wakeBy).
type loopTimers struct {
	sweep, commit, poll *time.Ticker
	members, wake       *time.Timer
}

func newLoopTimers(cfg config.Dispatcher) *loopTimers {
	return &loopTimers{
		sweep: time.NewTicker(cfg.RebalanceInterval), commit: time.NewTicker(cfg.CommitInterval), poll: time.NewTicker(cfg.PollInterval),
		members: time.NewTimer(time.Hour), wake: time.NewTimer(time.Hour),
	}
}

// arm sets the next read of the live set, as the last read asked (members.next; 0:
// no peer, no read).
func (t *loopTimers) arm(m *members) {
	if !m.rearm {
		return
	}
	m.rearm = false
	t.members.Stop()
	if m.next > 0 {
		t.members.Reset(m.next)
	}
}

func (t *loopTimers) stop() {
	t.sweep.Stop()
	t.commit.Stop()
	t.poll.Stop()
	t.members.Stop()
	t.wake.Stop()
}

func (d *Dispatcher) loop(ctx context.Context, events <-chan notify.Event, reports <-chan delivery.Report, entries <-chan bus.ReportEntry) error {
	if err := d.members.renew(ctx); err != nil {
		return err
	}
	d.members.announce(ctx) // the others re-read the live set and hand this one its groups
	d.rebalance(ctx, true)
	d.unsettled = true
	d.settleSignal()
	d.running.Store(true)
	defer d.running.Store(false)
	t := newLoopTimers(d.cfg)
	defer t.stop()
	t.arm(d.members)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-events:
			d.onEvent(ev)
		case ev := <-d.localEvents:
			d.onEvent(ev)
		case r := <-reports:
			d.applyReport(r)
		case e := <-entries:
			d.applyEntry(e)
		case <-t.sweep.C:
			d.refresh = true // the fallback for lost notifications and missed fences
		case <-t.members.C:
			d.members.check = true // the first peer lease seen at the last read ends now
		case <-d.members.lapsed:
			d.refresh = true // others may have taken cursors while the lease was out
		case <-t.commit.C:
			d.commit(ctx)
			d.health.tick(ctx, d.groups)
		case <-t.poll.C:
			if d.pollDue() {
				d.reader.poll(ctx)
				// Lag and backlogs change only with what a poll or a step sees, so an
				// idle dispatcher publishes them at the idle poll's pace.
				d.metrics.updateLag(d.groups, d.reader.maxIDs)
				d.metrics.export(ctx, d.groups)
			}
			d.checkDeadlines(ctx)
			d.askOutbox(ctx)
		case <-t.wake.C:
		}
		// Take everything already waiting before doing I/O, so one step serves many events.
	drain:
		for range 4096 {
			select {
			case ev := <-events:
				d.onEvent(ev)
			case ev := <-d.localEvents:
				d.onEvent(ev)
			case r := <-reports:
				d.applyReport(r)
			case e := <-entries:
				d.applyEntry(e)
			default:
				break drain
			}
		}
		if d.overflow.Swap(false) {
			d.reader.markAll() // a local notification was dropped: read every queue
		}
		d.applyOwnership(ctx)
		t.arm(d.members)
		d.step(ctx)
		d.commitReported(ctx)
		d.settleSignal()
		if !d.wakeAt.IsZero() {
			wait := max(d.wakeAt.Sub(d.now()), time.Millisecond)
			t.wake.Reset(wait)
			d.wakeAt = time.Time{}
		}
	}
}

func (d *Dispatcher) onEvent(ev notify.Event) {
	switch {
	case ev.Queue > 0:
		d.reader.onRows(ev)
	case ev.Group > 0:
		d.reload[ev.Group] = true // only this group is re-read (ownership.go)
		if gs := d.groups[ev.Group]; gs != nil {
			gs.health.nextRetry = time.Time{} // a redrive may have made retries due
			gs.health.backlogDirty = true     // a redrive, purge or resend changed its backlogs
		}
	case ev.Dispatchers:
		d.members.check = true
	}
}

// wakeBy asks the loop to run again no later than t.
func (d *Dispatcher) wakeBy(t time.Time) {
	if d.wakeAt.IsZero() || t.Before(d.wakeAt) {
		d.wakeAt = t
	}
}

func (d *Dispatcher) shutdown(reports <-chan delivery.Report, entries <-chan bus.ReportEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The process's worker stops with it: its jobs start no new POST and finish
	// the open ones (within timeout_ms). Their reports are applied before the
	// commit, so a successor sends none of it again; after the wait, later reports
	// go to the report stream.
	d.awaitLocalJobs(ctx, reports)
	d.bus.Detach()
	d.applyWaiting(reports, entries)
	all := make([]*cursorState, 0, len(d.cursors))
	for _, cs := range d.cursors {
		all = append(all, cs)
	}
	d.takeovers.finishHeld(ctx, all)
	d.commit(ctx)
	d.metrics.deleteAll()
	ids, held := releasable(all)
	d.members.release(ctx, ids, held)
	if err := d.st.Cursors().DispatcherDelete(ctx, d.id); err != nil {
		d.log.Warn("delete dispatcher row", "err", err)
	}
	d.members.announce(ctx) // the others claim the released cursors at once
}
