package groupcommit

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/stagetrace"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// route picks the db node whose writer flushes req and narrows req.Spread to that
// node's queues, so a request's keyless messages never split across nodes: keyed
// messages go to their queue's node; keyless ones to the node of the request's
// keyed messages when the topic has a writable queue there, else to the node of the
// topic's next writable queue in a per-topic round robin (so nodes get keyless
// requests in proportion to their writable queues). alone reports a request that
// spans nodes, or that carries an Idempotency-Key (stored on the control
// database) while its messages live on another node: it is stored alone, under XA.
// On one node route only reads the store's queue→node cache.
func (w *Writer) route(ctx context.Context, req *store.PublishRequest) (node int64, alone bool, err error) {
	var keyed []int64
	keyless := false
	for i := range req.Messages {
		if q := req.Messages[i].QueueID; q != 0 {
			keyed = append(keyed, q)
		} else {
			keyless = true
		}
	}
	nodes := map[int64]bool{}
	if len(keyed) > 0 {
		kn, err := w.st.Nodes().QueueNodes(ctx, keyed)
		if err != nil {
			return 0, false, fmt.Errorf("publish: %w", err)
		}
		for _, n := range kn {
			nodes[n] = true
		}
	}
	if keyless && len(req.Spread) > 0 {
		sn, err := w.st.Nodes().QueueNodes(ctx, req.Spread)
		if err != nil {
			return 0, false, fmt.Errorf("publish: %w", err)
		}
		n := w.keylessNode(req, sn, nodes)
		nodes[n] = true
	}
	for n := range nodes {
		node = n
	}
	if len(nodes) > 1 {
		return 0, true, nil
	}
	if node == 0 {
		node = models.PrimaryNodeID
	}
	return node, req.Idempotency != nil && node != models.PrimaryNodeID, nil
}

// keylessNode picks the node of req's keyless messages (see route) and narrows
// req.Spread to its queues; spreadNodes maps each Spread queue to its node and
// keyedNodes holds the nodes of req's keyed messages.
func (w *Writer) keylessNode(req *store.PublishRequest, spreadNodes map[int64]int64, keyedNodes map[int64]bool) int64 {
	first := spreadNodes[req.Spread[0]]
	one := true
	for _, q := range req.Spread {
		if spreadNodes[q] != first {
			one = false
			break
		}
	}
	if one {
		return first // the common case: nothing to narrow
	}
	var pick int64
	if len(keyedNodes) == 1 {
		for n := range keyedNodes {
			pick = n
		}
	}
	narrowed := make([]int64, 0, len(req.Spread))
	if pick != 0 {
		for _, q := range req.Spread {
			if spreadNodes[q] == pick {
				narrowed = append(narrowed, q)
			}
		}
	}
	if len(narrowed) == 0 {
		w.spreadMu.Lock()
		n := w.nodeRR[req.TopicID]
		w.nodeRR[req.TopicID] = n + 1
		w.spreadMu.Unlock()
		pick = spreadNodes[req.Spread[n%len(req.Spread)]]
		// Skip a node marked down (a failed flush, a failed probe) while another node
		// has a queue; the store's prober marks it up once it answers again.
		for i := 1; i < len(req.Spread) && w.st.Nodes().NodeIsDown(pick); i++ {
			pick = spreadNodes[req.Spread[(n+i)%len(req.Spread)]]
		}
		for _, q := range req.Spread {
			if spreadNodes[q] == pick {
				narrowed = append(narrowed, q)
			}
		}
	}
	req.Spread = narrowed
	return pick
}

// flushAlone stores one request that spans nodes (store.MessagesInsert runs it
// under XA) in the caller's goroutine, bounded by FlushTimeout like a flush, and
// notifies its rows.
func (w *Writer) flushAlone(ctx context.Context, it *item) error {
	select {
	case <-w.stop:
		return ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
	defer cancel()
	w.flush(fctx, 0, []*item{it}, stagetrace.Now())
	return <-it.done
}

// XARecoverInterval is how often a running Writer resolves prepared XA branches
// left by a crashed api process or a db node that died between a request's decision
// and its commit (store.XARecover): once at Run, then every interval while this
// process has reached a db node other than 1 (one control statement and one XA
// RECOVER per node each time). 5 s keeps a returned node's decided rows well inside
// the gap rule's timeout (30 s), so the dispatcher reads them as late commits, not
// as late rows.
const XARecoverInterval = 5 * time.Second

func (w *Writer) recoverXA(ctx context.Context) {
	t := time.NewTicker(XARecoverInterval)
	defer t.Stop()
	for first := true; ; first = false {
		// After the first pass (a crash's leftovers), only a process that reached
		// another node can have prepared branches: one node costs no statement.
		if !first && !w.st.Nodes().NodesOpened() {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			continue
		}
		if n, err := w.st.Queues().XARecover(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("resolve prepared xa branches", "err", err, "resolved", n)
		} else if n > 0 {
			w.log.Info("resolved prepared xa branches", "resolved", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reportFlush records a flush's outcome on node (0: several nodes, not recorded)
// in the store's node health: an error saying the node could not be reached or
// stopped answering (store.Unreachable) marks it down, so keyless requests avoid
// it until the store's background probe finds it answering (store.NodeHealthRun);
// an error the server answered with (the request's own fault, a move's seal, a
// deadlock) leaves its mark alone; a success marks it up.
func (w *Writer) reportFlush(node int64, err error) {
	if node == 0 {
		return
	}
	if err == nil {
		w.st.Nodes().NodeAnswered(node)
		return
	}
	if !store.Unreachable(err) {
		return // the server answered: a refusal of the request (conflict, invalid, a move's seal, a deadlock) or a cut
	}
	w.st.Nodes().NodeFailed(node, err)
}
