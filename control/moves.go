package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// Errors of topic moves and node drains; the API gives each its problem type.
var (
	// ErrUnknownNode means the target node of a move does not exist.
	ErrUnknownNode = errors.New("unknown db node")
	// ErrNodeNotWritable means the target node does not take new queues (not read-write).
	ErrNodeNotWritable = errors.New("db node is not read-write")
	// ErrTopicMoving means an earlier move of the topic has a queue not yet retired,
	// or a concurrent move of it won: one move at a time per topic.
	ErrTopicMoving = store.ErrTopicMoving
	// ErrNothingToMove means the topic (or node) has no live queue to move.
	ErrNothingToMove = errors.New("nothing to move")
	// ErrNotBuilt means the action is refused because what it needs is not built yet.
	ErrNotBuilt = errors.New("not built yet")
)

// MoveProgress is one queue a move sealed: From (its id), To (the queue its slots
// went to), Watermark (its MAX(id) at seal time; -1 while sealing), State (sealing,
// draining) and what each group still owes it.
type MoveProgress struct {
	From      int64
	To        int64
	Watermark int64
	State     string
	Slots     int
	Groups    []store.MoveOwed
}

// MoveTopic moves topic name's live queues to db node toNode (PMQ's seamless
// migration) and audits topic.move: as many new queues placed on toNode with cursors
// at offset 0 for every group, every key slot and keyless traffic pointed at them,
// then each old queue sealed (store.QueueSeal: no insert after it, its watermark
// final). Publishing is never refused: a writer with a stale topic that hits a
// sealed queue retries on the new slot table. Groups ordered by key or queue hold
// moved keys until they finished the old queue (dispatcher/movehold.go); the
// maintenance role retires an old queue once nothing is owed to it. Moving to the
// node the topic is on re-homes it onto fresh queues. Once the move took effect it
// is answered as done: a seal that does not finish within moveSealTimeout (the old
// queue's node away) is left to maintenance, and the caller's deadline no longer
// applies. Errors: models.ErrNotFound
// (topic), ErrUnknownNode, ErrNodeNotWritable, ErrTopicMoving, ErrNothingToMove,
// ErrNotBuilt (dead-letter and event topics).
func (c *Control) MoveTopic(ctx context.Context, a Actor, name string, toNode int64) (*models.Topic, error) {
	t, err := c.st.TopicGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	if models.ReservedName(t.Name) || t.Name == models.EventsTopic {
		return nil, fmt.Errorf("moving Herald's own topics (dead-letter and event topics) is %w", ErrNotBuilt)
	}
	n, err := c.st.Nodes().NodeGet(ctx, toNode)
	if errors.Is(err, models.ErrNotFound) {
		return nil, fmt.Errorf("node %d: %w", toNode, ErrUnknownNode)
	} else if err != nil {
		return nil, err
	}
	if n.State != models.NodeReadWrite {
		return nil, fmt.Errorf("node %d (%s) is %s: %w", n.ID, n.Name, n.State, ErrNodeNotWritable)
	}
	if !hasLive(t) {
		return nil, fmt.Errorf("topic %s has no live queue: %w", name, ErrNothingToMove)
	}
	before := recordOfTopic(t)
	moves, err := c.st.Nodes().TopicMoveBegin(ctx, t, toNode)
	switch {
	case errors.Is(err, models.ErrNoWritableNode):
		// The node changed state (a drain) since it was read above.
		return nil, fmt.Errorf("node %d: %w: %w", toNode, ErrNodeNotWritable, err)
	case errors.Is(err, models.ErrInvalid):
		return nil, fmt.Errorf("topic %s: %w: %w", name, ErrNothingToMove, err)
	case err != nil:
		return nil, err
	}
	// The move took effect: what follows, sealing included, must not turn it into
	// an error because the caller's deadline passed or the old queue's node is
	// away (its seal then waits for maintenance).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), moveFinishTimeout)
	defer cancel()
	// The new queues' cursors and the move records are in: owners claim them and
	// hold moved keys; this process's writers take the new slot table at once.
	c.onTopicChange.run(name)
	groups, err := c.st.TopicSubscriberIDs(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	c.notifyGroups(ctx, groups)
	var sealErr error
	failed := map[int64]bool{} // nodes a seal failed on: their other seals wait for maintenance too
	for _, m := range moves {
		// The store chose the old queues under the topic's lock: their nodes come
		// from the registry, not from t as read before it.
		node, err := c.st.Nodes().QueueNode(ctx, m.From)
		switch {
		case err != nil:
		case failed[node]:
			continue
		default:
			sctx, scancel := context.WithTimeout(ctx, moveSealTimeout)
			_, err = c.st.Nodes().QueueSeal(sctx, m, node)
			scancel()
			failed[node] = err != nil
		}
		if err != nil {
			// The maintenance role seals it on its next run; the new queues already
			// take every publish.
			c.log.Warn("seal moved queue; maintenance retries", "queue", m.From, "err", err)
			sealErr = err
		}
	}
	c.notifyGroups(ctx, groups)
	t, err = c.st.TopicGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	c.onTopicChange.run(name)
	qids := make([]int64, 0, len(t.Queues))
	for _, q := range t.Queues {
		qids = append(qids, q.ID)
	}
	c.notifyQueues(ctx, qids)
	c.Record(ctx, a, "topic.move", name, before, map[string]any{"to_node": toNode, "topic": recordOfTopic(t), "seal_error": errString(sealErr)})
	return t, nil
}

// moveFinishTimeout bounds what MoveTopic does once the move took effect (seals,
// notifications, the audit entry), whatever the caller's deadline; moveSealTimeout
// bounds each old queue's seal within it, so a node that does not answer leaves
// its seals to maintenance (after the first that failed there) and the move is
// still answered as done.
const (
	moveFinishTimeout = 20 * time.Second
	moveSealTimeout   = 5 * time.Second
)

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func hasLive(t *models.Topic) bool {
	for _, q := range t.Queues {
		if q.State == models.QueueReadWrite || q.State == models.QueueReadOnly {
			return true
		}
	}
	return false
}

// TopicMoveProgress returns, per queue an unretired move of topic t sealed, what
// each group still owes it.
func (c *Control) TopicMoveProgress(ctx context.Context, t *models.Topic) ([]MoveProgress, error) {
	moves, err := c.st.Nodes().TopicMoves(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	out := make([]MoveProgress, 0, len(moves))
	for _, m := range moves {
		owed, err := c.st.Nodes().QueueMoveOwed(ctx, m)
		if err != nil {
			return nil, err
		}
		st := "draining"
		if !m.Sealed() {
			st = "sealing"
		}
		if owed == nil {
			owed = []store.MoveOwed{}
		}
		out = append(out, MoveProgress{From: m.From, To: m.To, Watermark: m.Watermark, State: st, Slots: len(m.Slots), Groups: owed})
	}
	return out, nil
}

// DrainResult is what DrainNode did: the node (now draining) and the topics it
// moved off it (empty when nothing live was on it: the drain changed only the
// node's state).
type DrainResult struct {
	Node  *models.Node
	Moved []string
}

// DrainNode sets db node id `draining` (it takes no new queues) and moves every
// topic with a live queue on it to the read-write node placement picks among the
// others (MoveTopic), and audits node.drain. Node 1, the control database, cannot
// drain (its rows are the registry itself): a *models.ValidationError. Errors:
// models.ErrNotFound (no such node), models.ErrConflict for a retired node,
// ErrNodeNotWritable when topics live on it and no other node is read-write (the
// node's state is left as it was), and MoveTopic's errors. A topic whose earlier
// move is not retired yet (it may be moving onto this node right now) cannot move
// again: the others are moved, then DrainNode returns the result with an error
// wrapping ErrTopicMoving that names it; draining again once that move retired
// moves it. The node stays draining; once the moved queues are retired it holds
// none and may be retired.
func (c *Control) DrainNode(ctx context.Context, a Actor, id int64) (DrainResult, error) {
	if id == models.PrimaryNodeID {
		var v models.ValidationError
		v.Add("/node", "node 1 is the control database and cannot drain: Herald's own dead-letter and event topics live there; move other topics off it with herald topic move")
		return DrainResult{}, &v
	}
	if _, err := c.st.Nodes().NodeGet(ctx, id); err != nil {
		return DrainResult{}, err
	}
	topics, err := c.st.Nodes().TopicsOnNode(ctx, id)
	if err != nil {
		return DrainResult{}, err
	}
	if len(topics) > 0 {
		if err := c.otherWritableNode(ctx, id); err != nil {
			return DrainResult{}, fmt.Errorf("node %d holds %d topics and no other node takes them: %w", id, len(topics), err)
		}
	}
	var before map[string]any
	n, err := c.st.Nodes().NodeUpdate(ctx, id, func(n *models.Node) error {
		if n.State == models.NodeRetired {
			return fmt.Errorf("node %d is retired and cannot change: %w", id, models.ErrConflict)
		}
		before = recordOfNode(n)
		n.State = models.NodeDraining
		return nil
	})
	if err != nil {
		return DrainResult{}, err
	}
	// Read again now the node is draining: a move onto it that committed before
	// the state changed shows here; none can commit after (placement share-locks
	// the node's row and refuses a draining node).
	if topics, err = c.st.Nodes().TopicsOnNode(ctx, id); err != nil {
		return DrainResult{}, err
	}
	res := DrainResult{Node: n, Moved: []string{}}
	var moving []string
	for _, name := range topics {
		target, err := c.st.Nodes().PlaceTopicTarget(ctx)
		if err != nil {
			return res, fmt.Errorf("move topic %s off node %d: %w", name, id, err)
		}
		if _, err := c.MoveTopic(ctx, a, name, target); errors.Is(err, ErrTopicMoving) {
			moving = append(moving, name)
			continue
		} else if errors.Is(err, ErrNothingToMove) || errors.Is(err, models.ErrNotFound) {
			continue // moved or deleted since the list was read
		} else if err != nil {
			return res, fmt.Errorf("move topic %s off node %d: %w", name, id, err)
		}
		res.Moved = append(res.Moved, name)
	}
	c.Record(ctx, a, "node.drain", n.Name, before, map[string]any{"node": recordOfNode(n), "moved_topics": res.Moved, "still_moving": moving})
	if len(moving) > 0 {
		return res, fmt.Errorf("node %d is draining and %d topics moved off it (%v), but %v could not move: %w; drain again once the move is retired",
			id, len(res.Moved), res.Moved, moving, ErrTopicMoving)
	}
	return res, nil
}

// otherWritableNode returns nil when a read-write node other than id exists, or
// an error wrapping ErrNodeNotWritable.
func (c *Control) otherWritableNode(ctx context.Context, id int64) error {
	for after := int64(0); ; {
		ns, err := c.st.Nodes().NodeList(ctx, after, 100)
		if err != nil {
			return err
		}
		for _, n := range ns {
			if n.ID != id && n.State == models.NodeReadWrite {
				return nil
			}
			after = n.ID
		}
		if len(ns) < 100 {
			return fmt.Errorf("no other db node is read-write: %w", ErrNodeNotWritable)
		}
	}
}
