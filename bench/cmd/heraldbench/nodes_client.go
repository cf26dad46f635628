package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
)

// dbNode is a db node as GET /api/v1/nodes lists it.
type dbNode struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Weight int    `json:"weight"`
	State  string `json:"state"`
	Queues int    `json:"queues"`
}

// createNode registers a db node (POST /api/v1/nodes).
func (c *apiClient) createNode(ctx context.Context, name, dsn, state string, weight int) (dbNode, error) {
	var n dbNode
	body := map[string]any{"name": name, "dsn": dsn, "state": state, "weight": weight}
	return n, c.do(ctx, http.MethodPost, "/api/v1/nodes", c.jwt, body, http.StatusCreated, &n)
}

// patchNode applies a merge patch (weight, state) to node id.
func (c *apiClient) patchNode(ctx context.Context, id int64, patch map[string]any) error {
	return c.do(ctx, http.MethodPatch, "/api/v1/nodes/"+strconv.FormatInt(id, 10), c.jwt, patch, http.StatusOK, nil)
}

// listNodes returns the first page of db nodes (the benchmark has two).
func (c *apiClient) listNodes(ctx context.Context) ([]dbNode, error) {
	var out struct {
		Items []dbNode `json:"items"`
	}
	if err := c.do(ctx, http.MethodGet, "/api/v1/nodes?limit=100", c.jwt, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// placedTopic is a topic's queue ids and the db node each was placed on.
type placedTopic struct {
	name   string
	queues []int64
	node   map[int64]int64 // queue id → node id
}

// onNode returns the topic's queues placed on node id.
func (t placedTopic) onNode(id int64) []int64 {
	var out []int64
	for _, q := range t.queues {
		if t.node[q] == id {
			out = append(out, q)
		}
	}
	return out
}

// split spells the placement as "2 on node 1, 2 on node 2".
func (t placedTopic) split() string {
	n1, n2 := len(t.onNode(1)), len(t.queues)-len(t.onNode(1))
	return fmt.Sprintf("%d on node 1, %d on node 2", n1, n2)
}

// createPlacedTopic creates a topic of n queues and returns where they were placed.
func (c *apiClient) createPlacedTopic(ctx context.Context, name string, n int) (placedTopic, error) {
	var out struct {
		Queues []struct {
			ID   int64 `json:"id"`
			Node int64 `json:"node"`
		} `json:"queues"`
	}
	t := placedTopic{name: name, node: map[int64]int64{}}
	if err := c.do(ctx, http.MethodPost, "/api/v1/topics", c.jwt, map[string]any{"name": name, "queues": n}, http.StatusCreated, &out); err != nil {
		return t, err
	}
	for _, q := range out.Queues {
		node := q.Node
		if node <= 0 {
			node = 1
		}
		t.queues = append(t.queues, q.ID)
		t.node[q.ID] = node
	}
	if len(t.queues) != n {
		return t, fmt.Errorf("create topic %s: asked %d queues, got %d", name, n, len(t.queues))
	}
	return t, nil
}

// weightsFor returns weights (w1, w2) of nodes 1 and 2, holding q1 and q2 queues,
// under which Herald's placement (each queue to the read-write node whose
// (queues+1)/weight is lowest, ties to node 1) puts exactly want of n new queues on
// node 2; false when no weights in 1…10,000 do.
func weightsFor(q1, q2, n, want int) (w1, w2 int, ok bool) {
	for _, w1 := range []int{10000, 1000, 100, 10, 1} {
		for w2 := 1; w2 <= 10000; w2++ {
			if placeOnSecond(q1, q2, w1, w2, n) == want {
				return w1, w2, true
			}
		}
	}
	return 0, 0, false
}

// placeOnSecond simulates placing n queues on two read-write nodes and returns
// how many go to the second.
func placeOnSecond(q1, q2, w1, w2, n int) int {
	on2 := 0
	for range n {
		// Node 2 wins when (q2+1)/w2 < (q1+1)/w1.
		if int64(q2+1)*int64(w1) < int64(q1+1)*int64(w2) {
			q2++
			on2++
		} else {
			q1++
		}
	}
	return on2
}
