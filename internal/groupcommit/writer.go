// Package groupcommit merges concurrent publish requests into shared transactions:
// one Writer per db node flushes everything waiting as soon as the previous flush
// returns (no timer), so a busy node does one multi-row INSERT per touched queue
// per flush instead of one transaction per request (measured on 2 cores as an
// order of magnitude).
package groupcommit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/stagetrace"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// Flush caps: about 1,000 rows and 4 MiB of bodies per transaction. A single request
// larger than a cap is flushed alone.
const (
	MaxFlushRows  = 1000
	MaxFlushBytes = 4 << 20
)

// ErrClosed is returned by Submit after the Writer stopped.
var ErrClosed = errors.New("publish writer stopped")

// ErrOutcomeUnknown wraps Submit's error when the request was handed to a flush that
// did not report back in time (the caller's context ended, or the flush hit
// FlushTimeout): its transaction may still have committed. Publishers retry with
// the same Idempotency-Key to be safe.
var ErrOutcomeUnknown = errors.New("publish outcome unknown")

// DefaultFlushTimeout bounds one flush (statement and commit) when
// Config.FlushTimeout is zero.
const DefaultFlushTimeout = 10 * time.Second

// Notifier is told, after each commit, the rows the flush stored in each queue.
type Notifier interface {
	Published(ctx context.Context, evs []notify.Event) error
}

type item struct {
	ctx   context.Context
	req   *store.PublishRequest
	rows  int
	bytes int
	done  chan error
}

// Writer is an api process's group-commit writer: one set of lanes per db node
// (node 1's from the start, another's from its first request), so a flush writes
// one node. A request whose messages span nodes (keyed messages whose queues live
// on different nodes) is stored alone, under XA (store.MessagesInsert). Run must be
// running for Submit to make progress.
type Writer struct {
	st     *store.Store
	notify Notifier
	stop   chan struct{}
	log    *slog.Logger
	// nodes holds each db node's queue of requests; runCtx and running let Submit
	// start a new node's lanes while Run runs.
	nodesMu sync.Mutex
	nodes   map[int64]chan *item
	runCtx  context.Context
	lanesWG sync.WaitGroup
	// nodeRR is the per-topic round-robin counter that picks the node of a request's
	// keyless messages when the topic's writable queues span nodes.
	nodeRR map[int64]int
	// spread is the per-topic round-robin counter of keyless placement (assign).
	spreadMu sync.Mutex
	spread   map[int64]int
	lanes    int           // Config.Lanes, at least 1
	timeout  time.Duration // Config.FlushTimeout, DefaultFlushTimeout when 0
}

// Config is what New builds a Writer from. Store, Notifier and Log are required.
type Config struct {
	Store    *store.Store
	Notifier Notifier // told of every commit
	Log      *slog.Logger
	// Lanes is how many flushes may run at once per db node, each on its own
	// connection; 0 means 1.
	Lanes int
	// FlushTimeout bounds one flush, statement and commit; a flush that runs out
	// fails its requests with ErrOutcomeUnknown and frees its lane, so a stalled
	// database cannot hold publishes forever. 0 means DefaultFlushTimeout (10 s).
	FlushTimeout time.Duration
}

// New returns a Writer over c.Store that notifies c.Notifier after each commit, or
// an error naming a missing dependency or a negative setting.
func New(c Config) (*Writer, error) {
	switch {
	case c.Store == nil:
		return nil, errors.New("groupcommit: Store is required")
	case c.Notifier == nil:
		return nil, errors.New("groupcommit: Notifier is required")
	case c.Log == nil:
		return nil, errors.New("groupcommit: Log is required")
	case c.Lanes < 0:
		return nil, fmt.Errorf("groupcommit: Lanes %d: must be ≥ 0", c.Lanes)
	case c.FlushTimeout < 0:
		return nil, fmt.Errorf("groupcommit: FlushTimeout %v: must be ≥ 0", c.FlushTimeout)
	}
	w := &Writer{st: c.Store, notify: c.Notifier, stop: make(chan struct{}), log: c.Log, spread: map[int64]int{}, nodeRR: map[int64]int{},
		nodes: map[int64]chan *item{models.PrimaryNodeID: make(chan *item, 4096)}, lanes: max(c.Lanes, 1), timeout: c.FlushTimeout}
	if w.timeout == 0 {
		w.timeout = DefaultFlushTimeout
	}
	return w, nil
}

// nodeQueue returns node's request queue, creating it (and, while Run runs,
// starting its lanes) on first use.
func (w *Writer) nodeQueue(node int64) chan *item {
	w.nodesMu.Lock()
	defer w.nodesMu.Unlock()
	in, ok := w.nodes[node]
	if !ok {
		in = make(chan *item, 4096)
		w.nodes[node] = in
		if w.runCtx != nil {
			w.startLanes(w.runCtx, node, in)
		}
	}
	return in
}

// startLanes starts Lanes lanes (default 1) on node's queue in; nodesMu is held.
func (w *Writer) startLanes(ctx context.Context, node int64, in chan *item) {
	for range w.lanes {
		w.lanesWG.Add(1)
		go func() { defer w.lanesWG.Done(); w.lane(ctx, node, in) }()
	}
}

// Submit queues req for the next flush and waits until it is committed or failed.
// The request is stored entirely or not at all. It returns ctx's error if ctx ends
// before the request is queued (nothing stored), an error wrapping ErrOutcomeUnknown
// and ctx's error if ctx ends later (a flush that already took it may still
// commit; one that had not is skipped), ErrClosed after Run returned, an error
// wrapping models.ErrQueueUnavailable (nothing stored) when the request's db node
// other than 1 is marked down (store.NodeIsDown), or the store's error for this
// request alone.
func (w *Writer) Submit(ctx context.Context, req *store.PublishRequest) error {
	it := &item{ctx: ctx, req: req, done: make(chan error, 1), rows: len(req.Messages)}
	for _, m := range req.Messages {
		it.bytes += len(m.Body)
	}
	node, alone, err := w.route(ctx, req)
	if err != nil {
		return err
	}
	if !alone && node != models.PrimaryNodeID && w.st.Nodes().NodeIsDown(node) {
		// Keyed messages whose queue is on a node marked down: refused before any
		// flush (nothing stored), so they neither wait out a stalled server nor hold
		// its lane; the store's probe, not this request, finds the node back.
		return fmt.Errorf("db node %d is down: %w", node, models.ErrQueueUnavailable)
	}
	if alone {
		return w.flushAlone(ctx, it)
	}
	select {
	case <-w.stop:
		return ErrClosed
	default:
	}
	select {
	case w.nodeQueue(node) <- it:
	case <-w.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err())
	}
}

// Run flushes on Lanes connections (default 1) until ctx ends, then fails whatever
// is still queued with ErrClosed. Each lane flushes everything waiting as soon as
// its previous flush returns; with two lanes one flush's statement overlaps the
// other's commit. Per-key order holds: a publisher's next request starts only after
// its previous one committed.
func (w *Writer) Run(ctx context.Context) error {
	w.nodesMu.Lock()
	w.runCtx = ctx
	for node, in := range w.nodes {
		w.startLanes(ctx, node, in)
	}
	w.nodesMu.Unlock()
	go w.recoverXA(ctx)
	<-ctx.Done()
	w.nodesMu.Lock()
	w.runCtx = nil // no lane starts after this
	w.nodesMu.Unlock()
	w.lanesWG.Wait()
	close(w.stop)
	w.nodesMu.Lock()
	defer w.nodesMu.Unlock()
	for _, in := range w.nodes {
	drain:
		for {
			select {
			case it := <-in:
				it.done <- ErrClosed
			default:
				break drain
			}
		}
	}
	return nil
}

// gathering is the flush a lane is filling: its requests, rows and body bytes.
type gathering struct {
	items       []*item
	rows, bytes int
	carry       *item // the request that did not fit: it starts the next flush
}

// full reports whether the flush reached a cap.
func (g *gathering) full() bool { return g.rows >= MaxFlushRows || g.bytes >= MaxFlushBytes }

// take adds it unless its caller gave up (answered at once) or it would pass a cap
// (kept as carry); it reports whether the flush can take more.
func (g *gathering) take(it *item) bool {
	if it.ctx.Err() != nil {
		it.done <- it.ctx.Err() // its caller gave up before any flush took it
		return true
	}
	if len(g.items) > 0 && (g.rows+it.rows > MaxFlushRows || g.bytes+it.bytes > MaxFlushBytes) {
		g.carry = it
		return false
	}
	g.items = append(g.items, it)
	g.rows += it.rows
	g.bytes += it.bytes
	return true
}

func (w *Writer) lane(ctx context.Context, node int64, in chan *item) {
	var carry *item
	for {
		var first *item
		if carry != nil {
			first, carry = carry, nil
		} else {
			select {
			case first = <-in:
			case <-ctx.Done():
				return
			}
		}
		traceStart := stagetrace.Now()
		g := &gathering{}
		if g.take(first); len(g.items) == 0 {
			continue
		}
	drain:
		for !g.full() {
			select {
			case it := <-in:
				if !g.take(it) {
					break drain
				}
			default:
				break drain
			}
		}
		carry = g.carry
		// A flush outlives shutdown (it finishes what it took) but never FlushTimeout.
		// On a node other than 1 it also ends when the node is marked down
		// (store.NodeContext): its requests answer at once, outcome unknown.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
		fctx, cancelDown := w.st.Nodes().NodeContext(fctx, node)
		w.flush(fctx, node, g.items, traceStart)
		cancelDown()
		cancel()
	}
}

// assign puts every keyless message (QueueID 0) of the flush into one queue per
// topic, the next of its Spread in round-robin order per flush: a flush of many
// single-message requests then writes one queue table (one INSERT, in autocommit)
// and the dispatchers read and cut one run of offsets, instead of touching every
// queue with a few rows each.
func (w *Writer) assign(reqs []*store.PublishRequest) {
	chosen := map[int64]int64{}
	for _, r := range reqs {
		for i := range r.Messages {
			m := &r.Messages[i]
			if m.QueueID != 0 || len(r.Spread) == 0 {
				continue
			}
			q, ok := chosen[r.TopicID]
			if !ok {
				w.spreadMu.Lock()
				n := w.spread[r.TopicID]
				w.spread[r.TopicID] = n + 1
				w.spreadMu.Unlock()
				q = r.Spread[n%len(r.Spread)]
				chosen[r.TopicID] = q
			}
			m.QueueID = q
		}
	}
}

// flush stores batch (node's requests; node 0 for a request spanning nodes),
// answers each request and notifies; a failed flush marks node down for keyless
// placement. traceStart is when the lane took its first request (stagetrace).
func (w *Writer) flush(ctx context.Context, node int64, batch []*item, traceStart time.Time) {
	reqs := make([]*store.PublishRequest, len(batch))
	for i, it := range batch {
		reqs[i] = it.req
	}
	w.assign(reqs)
	err := w.st.Queues().MessagesInsert(ctx, reqs)
	traceCommitted := stagetrace.Now()
	w.reportFlush(node, err)
	errs := make([]error, len(batch))
	if err != nil && ctx.Err() != nil {
		// The deadline cut the statement or the commit: whether it committed is unknown,
		// and retrying alone would only wait out the same stall.
		for i := range errs {
			errs[i] = fmt.Errorf("%w: flush of %d requests: %w", ErrOutcomeUnknown, len(batch), ctx.Err())
		}
	} else if errors.Is(err, models.ErrOutcomeUnknown) {
		// A cross-node commit went unanswered: recovery may store the whole flush, so
		// no request is tried again here.
		for i := range errs {
			errs[i] = err
		}
	} else if err != nil && len(batch) > 1 {
		// A bad request must fail only itself: retry each alone once.
		w.log.Warn("group commit failed; retrying requests alone", "requests", len(batch), "err", err)
		for i, r := range reqs {
			errs[i] = w.st.Queues().MessagesInsert(ctx, []*store.PublishRequest{r})
		}
	} else {
		errs[0] = err
	}
	// Notified rows point at the requests' messages: handlers only read them after
	// their answer (respond), and receivers treat them as read-only.
	byQueue := map[int64][]notify.Row{}
	var order []int64
	for i, it := range batch {
		if errs[i] != nil {
			continue
		}
		for j := range it.req.Messages {
			m := &it.req.Messages[j]
			if _, ok := byQueue[m.QueueID]; !ok {
				order = append(order, m.QueueID)
			}
			byQueue[m.QueueID] = append(byQueue[m.QueueID], notify.Row{ID: m.Offset, Tag: m.Tag, CreatedAt: m.CreatedAt, Key: m.Key, Msg: m})
		}
	}
	for i, it := range batch {
		it.done <- errs[i]
	}
	if len(order) > 0 && w.notify != nil {
		evs := make([]notify.Event, len(order))
		for i, q := range order {
			rows := byQueue[q]
			slices.SortFunc(rows, func(a, b notify.Row) int { return cmp.Compare(a.ID, b.ID) })
			evs[i] = notify.Event{Queue: q, Rows: rows}
		}
		if stagetrace.Enabled() {
			traceFlush(evs, traceStart, traceCommitted, time.Now())
		}
		if err := w.notify.Published(ctx, evs); err != nil {
			w.log.Warn("notify after publish", "err", err)
		}
	}
}

// traceFlush marks the flush's start, its commit and its notification for every
// message it stored (stagetrace).
func traceFlush(evs []notify.Event, start, committed, notified time.Time) {
	for _, ev := range evs {
		for _, r := range ev.Rows {
			stagetrace.Mark(stagetrace.FlushStart, start, ev.Queue, r.ID)
			stagetrace.Mark(stagetrace.FlushCommitted, committed, ev.Queue, r.ID)
			stagetrace.Mark(stagetrace.Notified, notified, ev.Queue, r.ID)
		}
	}
}
