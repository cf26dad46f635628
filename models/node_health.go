package models

import (
	"maps"
	"slices"
	"time"
)

// NodeHealthState says whether a db node answers, as one process last saw it.
type NodeHealthState string

const (
	// NodeUp: the node answered its last probe or statement.
	NodeUp NodeHealthState = "up"
	// NodeDown: the node did not answer (connection refused, timeout, server gone);
	// reads that span nodes leave its queues out and keyless publishes avoid it
	// until a background probe finds it answering again.
	NodeDown NodeHealthState = "down"
	// NodeUnknown: this process has not probed the node yet (it just started, or
	// the node was just registered), or the node is retired and no longer probed.
	NodeUnknown NodeHealthState = "unknown"
)

// NodeHealth is one db node's reachability as this process sees it: State, Since
// (when it entered that state; zero for NodeUnknown) and Error (the last failure's
// text while down, "" otherwise).
type NodeHealth struct {
	Node  int64
	State NodeHealthState
	Since time.Time
	Error string
}

// NodeTransition is a change of a node's health, the input of the node.down and
// node.up operational events: From and To are the states, At when it happened.
type NodeTransition struct {
	Node     int64
	From, To NodeHealthState
	At       time.Time
	Error    string
}

// NodeTransitions compares a previous view of node health (prev, by node id) with
// the current one (cur) and returns the changes between up and down, in node id
// order: a node absent from prev counts as up (so a node already down when the
// watcher starts reports node.down once); a node unknown in cur, or absent from
// cur (retired), reports nothing. It is pure: callers keep prev.
func NodeTransitions(prev, cur map[int64]NodeHealth) []NodeTransition {
	var out []NodeTransition
	for _, id := range slices.Sorted(maps.Keys(cur)) {
		h := cur[id]
		if h.State == NodeUnknown {
			continue
		}
		from := NodeUp
		if p, ok := prev[id]; ok && p.State != NodeUnknown {
			from = p.State
		}
		if from != h.State {
			out = append(out, NodeTransition{Node: id, From: from, To: h.State, At: h.Since, Error: h.Error})
		}
	}
	return out
}
