package models

import "time"

// NodeState says what a db node takes (PMQ's db-node states). The control layer
// refuses the states Herald cannot act on yet rather than store them (see
// control.NodeSpec).
type NodeState string

const (
	// NodeReadWrite takes new queues (by weight) and writes to its queues.
	NodeReadWrite NodeState = "read-write"
	// NodeReadOnly takes no new queues and no writes; its queues keep delivering.
	NodeReadOnly NodeState = "read-only"
	// NodeDraining moves its queues to other nodes (not built yet: refused).
	NodeDraining NodeState = "draining"
	// NodeRetired holds no queues and is never used again; a retired node stays
	// listed for the record and cannot change.
	NodeRetired NodeState = "retired"
)

// NodeStates lists every node state in lifecycle order.
func NodeStates() []NodeState {
	return []NodeState{NodeReadWrite, NodeReadOnly, NodeDraining, NodeRetired}
}

// Valid reports whether s is one of NodeStates.
func (s NodeState) Valid() bool {
	for _, v := range NodeStates() {
		if s == v {
			return true
		}
	}
	return false
}

// PrimaryNodeID is the db node that is the control database itself, reached with
// HERALD_MYSQL_DSN. It always exists; one node alone is the zero-configuration
// default.
const PrimaryNodeID int64 = 1

// Node weights: a node's share of new queues among writable nodes is its weight
// over their sum. DefaultNodeWeight (100) is what a node gets when none is given;
// weights run from 1 to MaxNodeWeight (10,000).
const (
	DefaultNodeWeight = 100
	MaxNodeWeight     = 10000
)

// Node is one MySQL server (and database) holding queue tables. DSN is the plaintext
// go-sql-driver DSN, filled only for the store and control layers that connect to it
// (empty for the primary node, whose DSN is HERALD_MYSQL_DSN); DSNMasked is what
// every read shows: user, address and database with the password replaced by ***.
// Queues counts the queues placed on the node.
type Node struct {
	ID        int64
	Name      string
	DSN       string
	DSNMasked string
	Weight    int
	State     NodeState
	Queues    int
	CreatedAt time.Time
	UpdatedAt time.Time
	// Health is whether the node answers, as the reading process sees it (filled by
	// the control layer's reads; the zero value elsewhere).
	Health NodeHealth
}

// MaxNodeDSNBytes caps a node's DSN (1,024 bytes), so its sealed form fits dsn_enc.
const MaxNodeDSNBytes = 1024
