package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/models"
)

// NodeProbeInterval is how often NodeHealthRun pings every db node that is not
// retired (1 s): a node that stopped answering is marked down within about a
// second even without traffic, and one that answers again is marked up within a
// second, which is when keyless publishes and reads return to it.
const NodeProbeInterval = time.Second

// NodeProbeTimeout bounds one probe of one node (1 s): a server that accepts no
// connection and refuses none (a dropped host) reads as down after it.
const NodeProbeTimeout = time.Second

// nodeListEvery is how often the prober re-reads which nodes exist (10 probes):
// a node registered or retired meanwhile is probed, or dropped, within 10 s.
const nodeListEvery = 10

// unprobedDownFor is how long a failure marks a node down in a process where no
// NodeHealthRun runs (a test's Store, a CLI command), since nothing would mark it
// up again: 5 s, then the next statement tries the node again.
const unprobedDownFor = 5 * time.Second

// healthBook is one process's view of which db nodes answer. Every Store bound
// from one Open shares it (it lives in the nodePool).
type healthBook struct {
	mu      sync.Mutex
	m       map[int64]models.NodeHealth
	failed  map[int64]time.Time // last failure, for unprobedDownFor
	probing atomic.Int32        // NodeHealthRun loops running
	// downs holds, per node, a context cancelled when the node is next marked down
	// (NodeContext).
	downs map[int64]downSignal
}

// downSignal is a context that ends when its node is next marked down.
type downSignal struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// downSignal returns a context cancelled when node is next marked down (at once
// if it is down now).
func (b *healthBook) downSignal(node int64) context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.downs == nil {
		b.downs = map[int64]downSignal{}
	}
	d, ok := b.downs[node]
	if !ok {
		ctx, cancel := context.WithCancel(context.Background())
		d = downSignal{ctx: ctx, cancel: cancel}
		b.downs[node] = d
		if b.m[node].State == models.NodeDown {
			cancel()
		}
	}
	return d.ctx
}

func (b *healthBook) set(node int64, err error, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m, b.failed = map[int64]models.NodeHealth{}, map[int64]time.Time{}
	}
	prev := b.m[node]
	if err == nil {
		delete(b.failed, node)
		if prev.State == models.NodeDown {
			delete(b.downs, node) // cancelled: the next NodeContext gets a fresh one
		}
		if prev.State != models.NodeUp {
			b.m[node] = models.NodeHealth{Node: node, State: models.NodeUp, Since: now}
		}
		return
	}
	b.failed[node] = now
	if d, ok := b.downs[node]; ok && prev.State != models.NodeDown {
		d.cancel() // cut the statements running under it (NodeContext)
		delete(b.downs, node)
	}
	h := models.NodeHealth{Node: node, State: models.NodeDown, Since: now, Error: err.Error()}
	if prev.State == models.NodeDown {
		h.Since = prev.Since // the outage started at its first failure
	}
	b.m[node] = h
}

// NodeFailed records that db node failed to answer with err (a connection refused,
// a timeout, a server gone: the caller decides it was an outage, see NodeOutage):
// the node reads down from now (or since its first failure in a row) until a probe
// or a statement finds it answering. Safe for concurrent use.
func (s *Nodes) NodeFailed(node int64, err error) {
	if s.npool == nil || err == nil {
		return
	}
	s.npool.health.set(nodeOrPrimary(node), err, time.Now().UTC())
}

// NodeAnswered records that db node answered a statement or a probe: it reads up.
func (s *Nodes) NodeAnswered(node int64) {
	if s.npool == nil {
		return
	}
	s.npool.health.set(nodeOrPrimary(node), nil, time.Now().UTC())
}

// NodeIsDown reports whether db node is marked down in this process. Where no
// NodeHealthRun runs, a mark lasts unprobedDownFor (5 s) after the last failure.
func (s *Nodes) NodeIsDown(node int64) bool {
	if s.npool == nil {
		return false
	}
	b := &s.npool.health
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.m[nodeOrPrimary(node)]
	if !ok || h.State != models.NodeDown {
		return false
	}
	return b.probing.Load() > 0 || time.Since(b.failed[nodeOrPrimary(node)]) < unprobedDownFor
}

// NodesHealth returns this process's view of every db node it has probed or used,
// by node id (a copy). A node missing from it reads as models.NodeUnknown.
func (s *Nodes) NodesHealth() map[int64]models.NodeHealth {
	out := map[int64]models.NodeHealth{}
	if s.npool == nil {
		return out
	}
	b := &s.npool.health
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, h := range b.m {
		out[id] = h
	}
	return out
}

// NodesDown lists the db nodes this process sees down (NodeIsDown), in id order.
func (s *Nodes) NodesDown() []models.NodeHealth {
	var out []models.NodeHealth
	hs := s.NodesHealth()
	for _, id := range slices.Sorted(maps.Keys(hs)) {
		if hs[id].State == models.NodeDown && s.NodeIsDown(id) {
			out = append(out, hs[id])
		}
	}
	return out
}

// NodeContext returns a context derived from ctx that is also cancelled when db
// node is marked down (by the prober or another statement's failure), and its
// cancel function, which the caller must call. A statement on a node that stopped
// answering without refusing connections (a stalled or dropped server) then ends
// within a probe (about NodeProbeInterval + NodeProbeTimeout) instead of at its
// deadline. Node 1 gets ctx as it is.
func (s *Nodes) NodeContext(ctx context.Context, node int64) (context.Context, context.CancelFunc) {
	node = nodeOrPrimary(node)
	if s.npool == nil || node == models.PrimaryNodeID {
		return context.WithCancel(ctx)
	}
	out, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.npool.health.downSignal(node), cancel) // no goroutine until it fires
	return out, func() {
		stop()
		cancel()
	}
}

// NodeOutage reports whether err, from a statement on db node, means the node did
// not answer (Unreachable, or a cancellation by NodeContext while the node is
// marked down) rather than refused
// the statement; on such an error it marks the node down
// (NodeFailed). Node 1 is the control database: its outage is never skipped, so
// NodeOutage reports false for it.
func (s *Nodes) NodeOutage(node int64, err error) bool {
	node = nodeOrPrimary(node)
	if err == nil || node == models.PrimaryNodeID {
		return false
	}
	if errors.Is(err, context.Canceled) {
		return s.NodeIsDown(node) // cut by NodeContext: already marked, with the real error
	}
	if !Unreachable(err) {
		return false
	}
	s.NodeFailed(node, err)
	return true
}

// skipNode reports whether a read spanning nodes should leave db node out without
// trying it: it is not node 1 and is marked down.
func (s *Nodes) skipNode(node int64) bool {
	node = nodeOrPrimary(node)
	return node != models.PrimaryNodeID && s.NodeIsDown(node)
}

// NodeHealthRun probes every db node that is not retired every NodeProbeInterval
// (one ping each, within NodeProbeTimeout; the list re-read from the control
// database every 10 probes; a node this process opened meanwhile, such as one
// registered since, is probed from its first use) and records the outcome (NodeFailed, NodeAnswered), so
// a down node is found answering again by this loop, never by a user's request.
// Retired nodes are forgotten. It returns nil when ctx ends. One per process is
// enough; a second only probes twice as often.
func (s *Nodes) NodeHealthRun(ctx context.Context) error {
	if s.npool == nil {
		return nil
	}
	s.npool.health.probing.Add(1)
	defer s.npool.health.probing.Add(-1)
	t := time.NewTicker(NodeProbeInterval)
	defer t.Stop()
	var ids, retired []int64
	for i := 0; ; i++ {
		if i%nodeListEvery == 0 || len(ids) == 0 {
			if live, gone, err := s.nodeIDsByLife(ctx); err == nil {
				ids, retired = live, gone
				s.npool.health.keepOnly(ids)
			}
		}
		for _, id := range s.npool.withOpened(ids, retired) {
			s.probeNode(ctx, id)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// probeNode pings node once and records the outcome.
func (s *Nodes) probeNode(ctx context.Context, id int64) {
	pctx, cancel := context.WithTimeout(ctx, NodeProbeTimeout)
	defer cancel()
	h, err := s.node(pctx, id)
	if err == nil {
		err = h.db.PingContext(pctx)
	}
	if ctx.Err() != nil {
		return // shutting down: not the node's fault
	}
	if err != nil {
		s.NodeFailed(id, err)
		return
	}
	s.NodeAnswered(id)
}

// nodeIDsByLife lists the ids of the nodes that are not retired and of those that are.
func (s *Nodes) nodeIDsByLife(ctx context.Context) (live, retired []int64, err error) {
	var rows []struct {
		ID    int64
		State string
	}
	if err := s.db.WithContext(ctx).Raw("SELECT id, state FROM db_nodes ORDER BY id").Scan(&rows).Error; err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		if r.State == string(models.NodeRetired) {
			retired = append(retired, r.ID)
		} else {
			live = append(live, r.ID)
		}
	}
	return live, retired, nil
}

// keepOnly forgets the health of nodes not in ids (retired or deleted).
func (b *healthBook) keepOnly(ids []int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	keep := map[int64]bool{}
	for _, id := range ids {
		keep[id] = true
	}
	for id := range b.m {
		if !keep[id] {
			delete(b.m, id)
			delete(b.failed, id)
		}
	}
	for id, d := range b.downs {
		if !keep[id] {
			d.cancel() // a retired node: nothing runs on it any more
			delete(b.downs, id)
		}
	}
}

// NodeUnreachableError is a read that left db node Node's queues out because the
// node did not answer (Err) or was already marked down (Err says since when).
// Reads spanning nodes return it, joined per node, with what the other nodes
// answered.
type NodeUnreachableError struct {
	Node int64
	Err  error
}

// Error says which node was left out and why.
func (e *NodeUnreachableError) Error() string {
	return fmt.Sprintf("db node %d unreachable: %v", e.Node, e.Err)
}

// Unwrap returns the node's failure.
func (e *NodeUnreachableError) Unwrap() error { return e.Err }

// OnlyUnreachable reports whether err is non-nil and made only of
// *NodeUnreachableError values (joined or wrapped): the read's other nodes answered.
func OnlyUnreachable(err error) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !OnlyUnreachable(e) {
				return false
			}
		}
		return true
	}
	var ne *NodeUnreachableError
	return errors.As(err, &ne)
}

// unreachable builds the NodeUnreachableError of node for a read that skipped it
// (err nil: it was marked down) or failed on it with err (marked down here).
func (s *Nodes) unreachable(node int64, err error) error {
	if err == nil {
		h := s.NodesHealth()[node]
		err = fmt.Errorf("down since %s: %s", h.Since.Format(time.RFC3339), h.Error)
	} else {
		s.NodeFailed(node, err)
	}
	return &NodeUnreachableError{Node: node, Err: err}
}

// withOpened returns ids with the nodes this process has opened a pool for added,
// except the retired ones (in id order), so a node registered after the last list
// is probed once used.
func (p *nodePool) withOpened(ids, retired []int64) []int64 {
	out := slices.Clone(ids)
	p.mu.Lock()
	for id := range p.dbs {
		if !slices.Contains(out, id) && !slices.Contains(retired, id) {
			out = append(out, id)
		}
	}
	p.mu.Unlock()
	slices.Sort(out)
	return out
}
