package dispatcher

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// orderer is one ordering mode of a group: unordered (order_none.go), by queue
// (order_queue.go) or by key (order_key.go). It cuts a cursor's jobs, takes back a
// failed POST retried in place, handles a job that exhausted its generations
// without reports, and owns what the mode remembers of a cursor between cuts
// (blocks, blocked keys, key floors, the keyless turn) with its rows in MySQL. The
// dispatcher's loop and cursors know no mode: they ask the group's orderer
// (orders.of). Modeled on RocketMQ's push consumer, whose concurrent and orderly
// consume services share one interface.
type orderer interface {
	// cut cuts at most one job of cs (of gs) and reports whether it did; a probe
	// is the half-open breaker's one batch.
	cut(ctx context.Context, gs *groupState, cs *cursorState, now time.Time, probe bool) bool
	// inPlace takes ip, a failed POST of js retried in place, back from in flight
	// and returns its messages to send again (offset order); the mode holds what
	// waits on them.
	inPlace(cs *cursorState, js *jobState, ip *delivery.InPlace) []pendingMsg
	// done tells the mode that off (of key key) of cs is finished for good.
	done(cs *cursorState, off int64, key string)
	// noReport ends js, which exhausted its generations without reports.
	noReport(ctx context.Context, js *jobState)
	// takenOver gives cs, just taken over, the offsets its previous owner's
	// ordered jobs reported done (orderedDone).
	takenOver(ctx context.Context, cs *cursorState, done []int64)
	// blocked reports whether the mode holds messages of cs back (a block or a
	// blocked key) and adds the keys it holds to keys when keys is not nil.
	blocked(cs *cursorState, keys map[string]bool) bool
	// void forgets cs's state, deleting its rows at the next save when del is
	// set (the group left the mode) and leaving them to the next owner when not
	// (the cursor was dropped).
	void(cs *cursorState, del bool)
	// load reads the blocks of the owned groups of the mode: a fresh (newly
	// claimed) cursor takes its over, and operators' resume and skip are applied.
	// It reports whether a skip wrote dead letters.
	load(ctx context.Context, groups map[int64]*groupState, at func(group, queue int64) *cursorState, fresh map[*cursorState]bool) bool
	// save writes the changed blocks, with the commits.
	save(ctx context.Context)
}

// orderHost is what an orderer asks of the dispatcher that runs it.
type orderHost interface {
	// wakeBy asks the loop to run again by t.
	wakeBy(t time.Time)
	// startJob registers a job and sends it (Dispatcher.startJob).
	startJob(ctx context.Context, js *jobState, taken []pendingMsg, now time.Time) bool
	// finishJob releases a job, its unreported messages due after backoff.
	finishJob(js *jobState, backoff time.Duration)
	// movedFrom lists the moves into cs's queue with the group's cursor on each
	// move's old queue (nil when not held).
	movedFrom(cs *cursorState) []movedFrom
}

// blockStore is the part of the store orderers read and write: ordered blocks,
// blocked keys and the dead-letter writes of an operator's skip. store.Sides is the
// production implementation.
type blockStore interface {
	OrderedBlocksSave(ctx context.Context, set []models.OrderedBlock, cleared [][2]int64) error
	OrderedBlocksByGroups(ctx context.Context, groupIDs []int64, onlyActions bool) ([]models.OrderedBlock, error)
	OrderedBlockActionDone(ctx context.Context, groupID, queueID int64, action string) error
	OrderedKeyBlocksSave(ctx context.Context, set, cleared []models.OrderedKeyBlock) error
	OrderedKeyBlocksByGroups(ctx context.Context, groupIDs []int64, onlyActions bool, limit int) ([]models.OrderedKeyBlock, error)
	OrderedKeyBlockActionDone(ctx context.Context, groupID, queueID int64, key, action string) error
	QueueRowsByIDs(ctx context.Context, queueID int64, ids []int64) ([]store.RowMeta, error)
	RetryRecord(ctx context.Context, groupID int64, maxAttempts int, schedule []int, fails []store.Failure) (store.FailureOutcome, error)
}

var _ blockStore = store.Sides{}

// orderBase is what every orderer shares: its host, the owner id jobs carry, the
// dispatcher's settings, the store and the log.
type orderBase struct {
	host  orderHost
	owner string
	cfg   config.Dispatcher
	st    blockStore
	log   *slog.Logger
	now   Clock
}

// jobShape is how a cut job goes: POSTs at once, attempt number, the breaker's
// probe, ordered (one POST at a time per queue or key).
type jobShape struct {
	parallelism, attempt int
	probe, ordered       bool
	// batch, when above 0, is a bisected job's POST size (delivery.BisectedBatch).
	batch int
}

// send starts a first-delivery job of taken (offset order), taken out of cs.
func (b orderBase) send(ctx context.Context, gs *groupState, cs *cursorState, taken []pendingMsg, sh jobShape, now time.Time) bool {
	offsets := make([]int64, len(taken))
	for i, t := range taken {
		offsets[i] = t.offset
	}
	bisects := 1 // ordered groups and batch size 1 never bisect
	if !sh.ordered {
		bisects = gs.g.BatchSize
	}
	limit := delivery.ThrottleLimit(gs.g.MaxThrottles, bisects)
	j := delivery.Job{Group: gs.g.ID, Queue: cs.queueID, Version: cs.version, Owner: b.owner, Offsets: delivery.Ranges(offsets),
		Parallelism: sh.parallelism, Attempt: sh.attempt, Probe: sh.probe, Ordered: sh.ordered, LastThrottle: lastThrottle(taken, limit),
		Batch: sh.batch, Messages: carried(taken)}
	return b.host.startJob(ctx, &jobState{job: j, group: gs, cursor: cs}, taken, now)
}

// deadLetter writes fails, messages of cs an operator skipped, as dead letters and
// marks them done; false if the write failed (tried again at the next load).
func (b orderBase) deadLetter(ctx context.Context, cs *cursorState, fails []store.Failure) bool {
	g := cs.group.g
	if len(fails) == 0 {
		return true
	}
	if _, err := b.st.RetryRecord(ctx, g.ID, 1, g.RetrySchedule, fails); err != nil {
		b.log.Warn("dead-letter skipped ordered messages", "group", g.Name, "err", err)
		return false
	}
	done := make(map[int64]bool, len(fails))
	for _, f := range fails {
		done[f.Offset] = true
	}
	cs.pending = slices.DeleteFunc(cs.pending, func(p pendingMsg) bool { return done[p.offset] })
	for off := range done {
		cs.markDone(off)
	}
	return true
}

// groupsIn returns the ids of groups whose mode is m.
func groupsIn(groups map[int64]*groupState, m func(*models.Group) bool) []int64 {
	var ids []int64
	for id, gs := range groups {
		if m(gs.g) {
			ids = append(ids, id)
		}
	}
	return ids
}

// orders holds the dispatcher's three orderers, one per mode.
type orders struct {
	none  *noOrder
	queue *queueOrder
	key   *keyOrder
}

// newOrders returns the orderers of a dispatcher; sched and events serve the
// unordered mode's jobs without reports (noOrder).
func newOrders(b orderBase, sched scheduleStore, events *opEvents) *orders {
	return &orders{none: &noOrder{orderBase: b, sched: sched, events: events}, queue: newQueueOrder(b), key: newKeyOrder(b)}
}

// of returns g's orderer.
func (o *orders) of(g *models.Group) orderer {
	switch {
	case g.OrderedByKey():
		return o.key
	case g.Ordered:
		return o.queue
	}
	return o.none
}

// all lists every orderer.
func (o *orders) all() []orderer { return []orderer{o.none, o.queue, o.key} }

// modeSet voids cs's state in every mode but g's (its group's settings changed):
// a block left from another mode is void and its row goes at the next save.
func (o *orders) modeSet(g *models.Group, cs *cursorState) {
	keep := o.of(g)
	for _, m := range o.all() {
		if m != keep {
			m.void(cs, true)
		}
	}
}

// dropped forgets a dropped cursor in every mode; its rows stay for its next owner.
func (o *orders) dropped(cs *cursorState) {
	for _, m := range o.all() {
		m.void(cs, false)
	}
}

// load reads every mode's blocks (orderer.load); true if a skip wrote dead letters.
func (o *orders) load(ctx context.Context, groups map[int64]*groupState, at func(group, queue int64) *cursorState, fresh map[*cursorState]bool) bool {
	dead := false
	for _, m := range o.all() {
		dead = m.load(ctx, groups, at, fresh) || dead
	}
	return dead
}

// save writes every mode's changed blocks.
func (o *orders) save(ctx context.Context) {
	for _, m := range o.all() {
		m.save(ctx)
	}
}

// takeBack removes from in flight the messages of ip's failed POST that js still
// holds and returns them, in offset order, ready to be sent again.
func takeBack(cs *cursorState, js *jobState, ip *delivery.InPlace) []pendingMsg {
	var back []pendingMsg
	for _, off := range delivery.Expand(ip.Offsets) {
		inf, ok := cs.inflight[off]
		if !ok || inf.job != js {
			continue
		}
		delete(cs.inflight, off)
		delete(js.remaining, off)
		back = append(back, pendingMsg{offset: off, createdAt: inf.createdAt, returns: inf.returns, key: inf.key})
	}
	return back
}

// retryAt is when a job without reports of g, at attempt, goes again in place, or
// zero when its attempts are exhausted and it waits for an operator.
func retryAt(g *models.Group, attempt int, now time.Time) time.Time {
	if attempt >= g.MaxAttempts {
		return time.Time{}
	}
	return now.Add(models.RetryDelay(g.RetrySchedule, attempt+1))
}
