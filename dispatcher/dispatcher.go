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
	"github.com/heraldhq/herald/internal/stagetrace"
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
	// in a row (delivery.MaxThrottles); kept in memory, so a new owner counts afresh.
	retryThrottles map[[2]int64]int
	health         health // failure counters, breaker, throttle and retry due time
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
	streams  *bus.ReportStreams
	log      *slog.Logger
	now      Clock

	// localEvents carries the api's notifications of this process (notified.go).
	localEvents  chan notify.Event
	overflow     atomic.Bool // a local notification found localEvents full
	running      atomic.Bool // the loop serves localEvents
	holdsOrdered atomic.Bool // an owned group is ordered: reports are read without ReportGather

	groups  map[int64]*groupState
	events  opEvents               // rate-limit gates of operational events
	cursors map[int64]*cursorState // by cursor id
	byQueue map[int64][]*cursorState
	byGQ    map[[2]int64]*cursorState
	// movesTo lists, by new queue, the unretired moves into it (movehold.go), read
	// after the cursors on every adopt, so a new queue's cursor is never served
	// without the moves that created it.
	movesTo     map[int64][]models.QueueMove
	jobs        map[string]*jobState
	takeovers   map[*cursorState]struct{} // cursors held until their previous owner's reports are applied
	dirtyQ      map[int64]bool
	queueTopics map[int64]int64
	maxIDs      map[int64]int64
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
	lastPoll  time.Time
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

// New returns a Dispatcher with a fresh random id that sends its jobs on jobs. now
// may be nil (time.Now).
func New(cfg config.Dispatcher, keys delivery.Keys, st *store.Store, rdb redis.UniversalClient, jobs bus.Jobs, log *slog.Logger, now Clock) *Dispatcher {
	if now == nil {
		now = time.Now
	}
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	id := fmt.Sprintf("%s-%s", host, hex.EncodeToString(b[:]))
	notifier := notify.New(rdb, keys)
	return &Dispatcher{
		cfg: cfg, keys: keys, id: id,
		members: &members{id: id, st: st, notifier: notifier, cfg: cfg, log: log, lapsed: make(chan struct{}, 1)},
		events:  opEvents{st: st, notifier: notifier, log: log, now: now},
		st:      st, sched: st, rdb: rdb, notifier: notifier, bus: jobs, streams: bus.NewReportStreams(rdb, log), log: log, now: now,
		groups: map[int64]*groupState{}, cursors: map[int64]*cursorState{}, byQueue: map[int64][]*cursorState{},
		byGQ: map[[2]int64]*cursorState{}, jobs: map[string]*jobState{}, takeovers: map[*cursorState]struct{}{}, dirtyQ: map[int64]bool{},
		metrics: ownerMetrics{st: st, log: log, now: now}, reload: map[int64]bool{},
		claimSeq:    now().UnixNano() / int64(time.Millisecond),
		localEvents: make(chan notify.Event, localEventsBuffer),
	}
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
	eg.Go(func() error { d.streams.Read(ectx, d.keys.Reports(d.id), entries, d.reportGather); return nil })
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

// resubscribeDelay is the pause before a notify subscription that failed (Redis
// unreachable, a failover under way) is tried again.
const resubscribeDelay = 200 * time.Millisecond

func (d *Dispatcher) subscribe(ctx context.Context, events chan<- notify.Event) error {
	for ctx.Err() == nil {
		if err := notify.Subscribe(ctx, d.rdb, d.keys, events); err != nil && ctx.Err() == nil {
			d.log.Warn("notify subscription dropped; fallback poll covers it", "err", err)
			select {
			case <-time.After(resubscribeDelay):
			case <-ctx.Done():
			}
		}
	}
	return nil
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
	sweep := time.NewTicker(d.cfg.RebalanceInterval)
	defer sweep.Stop()
	members := time.NewTimer(time.Hour)
	defer members.Stop()
	arm := func() { // the next read of the live set, as the last read asked
		if d.members.rearm {
			d.members.rearm = false
			members.Stop()
			if d.members.next > 0 {
				members.Reset(d.members.next)
			}
		}
	}
	arm()
	commit := time.NewTicker(d.cfg.CommitInterval)
	defer commit.Stop()
	poll := time.NewTicker(d.cfg.PollInterval)
	defer poll.Stop()
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
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
		case <-sweep.C:
			d.refresh = true // the fallback for lost notifications and missed fences
		case <-members.C:
			d.members.check = true // the first peer lease seen at the last read ends now
		case <-d.members.lapsed:
			d.refresh = true // others may have taken cursors while the lease was out
		case <-commit.C:
			d.commit(ctx)
			d.tickHealth(ctx)
		case <-poll.C:
			if d.pollDue() {
				d.poll(ctx)
				// Lag and backlogs change only with what a poll or a step sees, so an
				// idle dispatcher publishes them at the idle poll's pace.
				d.updateLag()
				d.metrics.export(ctx, d.groups)
			}
			d.checkDeadlines(ctx)
			d.askOutbox(ctx)
		case <-wake.C:
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
			for q := range d.byQueue {
				d.dirtyQ[q] = true // a local notification was dropped: read every queue
			}
		}
		d.applyOwnership(ctx)
		arm()
		d.step(ctx)
		d.commitReported(ctx)
		d.settleSignal()
		if !d.wakeAt.IsZero() {
			wait := max(d.wakeAt.Sub(d.now()), time.Millisecond)
			wake.Reset(wait)
			d.wakeAt = time.Time{}
		}
	}
}

func (d *Dispatcher) onEvent(ev notify.Event) {
	switch {
	case ev.Queue > 0:
		if len(d.byQueue[ev.Queue]) == 0 {
			return
		}
		if len(ev.Rows) > 0 {
			if at := stagetrace.Now(); !at.IsZero() {
				for _, r := range ev.Rows {
					stagetrace.Mark(stagetrace.DispatchEvent, at, ev.Queue, r.ID)
				}
			}
			d.applyRows(ev)
		} else {
			d.dirtyQ[ev.Queue] = true
		}
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
	d.finishHeld(ctx, all)
	d.commit(ctx)
	d.metrics.deleteAll()
	ids, held := d.releasable(all)
	d.release(ctx, ids, held)
	if err := d.st.DispatcherDelete(ctx, d.id); err != nil {
		d.log.Warn("delete dispatcher row", "err", err)
	}
	d.members.announce(ctx) // the others claim the released cursors at once
}
