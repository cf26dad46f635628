package models

import (
	"errors"
	"fmt"
)

// ErrNoWritableNode means no db node is read-write, so no new queue can be placed.
var ErrNoWritableNode = errors.New("no read-write db node to place queues on")

// NodeLoad is what placement knows of a db node: its id, state, weight and the
// number of queues placed on it (its load).
type NodeLoad struct {
	ID     int64
	State  NodeState
	Weight int
	Queues int
}

// PlaceQueues chooses a node for each of n new queues among the read-write nodes of
// nodes: each queue goes to the node whose load after taking it, (Queues+1)/Weight,
// is lowest (ties to the lower id), and counts there for the next. Over time every
// writable node holds queues in proportion to its weight, and a node added later is
// filled first until it catches up (weighted least-loaded, as D'Hondt's seat
// allocation). Load is the queue count because a queue's future traffic is unknown
// when it is placed and the count is one cheap statement on the control database
// (docs/decisions.md). It returns ErrNoWritableNode when no node is read-write; nodes
// is not changed.
func PlaceQueues(nodes []NodeLoad, n int) ([]int64, error) {
	var live []NodeLoad
	for _, nd := range nodes {
		if nd.State == NodeReadWrite && nd.Weight > 0 {
			live = append(live, nd)
		}
	}
	if len(live) == 0 {
		return nil, ErrNoWritableNode
	}
	out := make([]int64, 0, n)
	for range n {
		best := -1
		for i, nd := range live {
			// Compare (q_i+1)/w_i < (q_b+1)/w_b without division.
			if best < 0 || int64(nd.Queues+1)*int64(live[best].Weight) < int64(live[best].Queues+1)*int64(nd.Weight) ||
				(int64(nd.Queues+1)*int64(live[best].Weight) == int64(live[best].Queues+1)*int64(nd.Weight) && nd.ID < live[best].ID) {
				best = i
			}
		}
		live[best].Queues++
		out = append(out, live[best].ID)
	}
	return out, nil
}

// String spells a load as "node 2 (read-write, weight 100, 3 queues)".
func (l NodeLoad) String() string {
	return fmt.Sprintf("node %d (%s, weight %d, %d queues)", l.ID, l.State, l.Weight, l.Queues)
}
