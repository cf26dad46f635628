package store

// A Store's methods come in five sets, one type each, so a reader finds one side
// of the data in one place and a role can take the narrow interface it uses (as
// river's riverdriver splits its executor). Every set is the same handle: the
// pools, the node pool and, for a Store bound by WithTx, the bound transaction.
// Converting between them is free; the accessors below are the only way across.
//
//   - Store: the control tables — topics, groups, retry and dead letters, attempts,
//     stats, events, the audit log, secrets, leases, idempotency, migrations.
//   - Nodes: the db nodes — their rows, connection pools and health, the placement of
//     queues on them and the moves of topics between them.
//   - Queues: the queue tables — messages by offset, their headers, XA across
//     nodes, the pruned floor of a queue.
//   - Cursors: where each group stands on each queue — the live dispatchers that
//     claim cursors, commits and releases, resets and positions, and the blocks of
//     ordered groups.
//   - Accounts: who may call — users, API keys, push-auth keys.

// Nodes is the db-node side of a Store: node rows, the pools of the nodes other
// than the control database, their health as the process sees it, the placement
// of queues and the moves of topics between nodes.
type Nodes Store

// Queues is the queue-table side of a Store: messages inserted (one node, or
// several under XA), scanned by id, loaded by offset, browsed, and the queue's
// pruned floor. Every method routes to the node that holds the queue.
type Queues Store

// Cursors is the group-position side of a Store: the live dispatchers (heartbeats,
// leases), their cursor claims, commits and releases, offset resets and positions,
// and the blocked queues and keys of ordered groups.
type Cursors Store

// Accounts is the caller side of a Store: users, API keys and push-auth signing
// keys.
type Accounts Store

// Nodes returns the db-node methods of s (the same handle).
func (s *Store) Nodes() *Nodes { return (*Nodes)(s) }

// Queues returns the queue-table methods of s (the same handle).
func (s *Store) Queues() *Queues { return (*Queues)(s) }

// Cursors returns the group-position methods of s (the same handle).
func (s *Store) Cursors() *Cursors { return (*Cursors)(s) }

// Accounts returns the caller methods of s (the same handle).
func (s *Store) Accounts() *Accounts { return (*Accounts)(s) }

// store returns the control methods of the handle s.
func (s *Nodes) store() *Store { return (*Store)(s) }

// store returns the control methods of the handle s.
func (s *Queues) store() *Store { return (*Store)(s) }

// store returns the control methods of the handle s.
func (s *Cursors) store() *Store { return (*Store)(s) }

// store returns the control methods of the handle s.
func (s *Accounts) store() *Store { return (*Store)(s) }

// Sides is a Store seen through its five method sets at once, for a role whose
// narrow store interface spans several of them (the worker's, the maintenance
// role's, the dispatcher's readers). It declares no method of its own.
type Sides struct {
	*Store
	*Nodes
	*Queues
	*Cursors
	*Accounts
}

// Sides returns s through all five method sets (the same handle).
func (s *Store) Sides() Sides { return Sides{s, s.Nodes(), s.Queues(), s.Cursors(), s.Accounts()} }
