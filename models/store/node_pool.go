package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/models"
)

// nodePool holds one connection pool per db node other than the primary, opened
// lazily from the registry (db_nodes) with the DSN unsealed by the Store's keyring
// and the settings of Open, and a cache of the node each queue lives on (queues
// never change node, so an entry is never stale; a miss reads the queues table).
// Every Store bound from one Open shares it.
type nodePool struct {
	mu       sync.Mutex
	dbs      map[int64]*nodeDB
	poolSize int

	qmu       sync.RWMutex
	queueNode map[int64]int64

	health healthBook
}

// nodeDB is an opened db node: its pool and its server flavour (RETURNING on
// MariaDB, LAST_INSERT_ID on MySQL 8).
type nodeDB struct {
	db      *sql.DB
	mariadb bool
}

func newNodePool() *nodePool {
	return &nodePool{dbs: map[int64]*nodeDB{}, poolSize: DefaultPoolSize, queueNode: map[int64]int64{}}
}

// close closes every node pool but the primary's (the Store closes that one).
func (p *nodePool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, n := range p.dbs {
		n.db.Close()
		delete(p.dbs, id)
	}
}

func (p *nodePool) setPoolSize(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.poolSize = n
	for _, d := range p.dbs {
		d.db.SetMaxOpenConns(n)
		d.db.SetMaxIdleConns(n)
	}
}

// forget drops node id's pool (its DSN changed); the next statement reopens it.
func (p *nodePool) forget(id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n, ok := p.dbs[id]; ok {
		n.db.Close()
		delete(p.dbs, id)
	}
}

// remember caches the node of each queue.
func (p *nodePool) remember(qs []queueRow) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	for _, q := range qs {
		p.queueNode[q.ID] = nodeOrPrimary(q.NodeID)
	}
}

func nodeOrPrimary(id int64) int64 {
	if id <= 0 {
		return models.PrimaryNodeID
	}
	return id
}

// nodeConn returns the connection for queue-table SQL on db node nodeID: for the
// primary, the Store's own (its transaction on a bound Store, so single-node
// behaviour is exactly the control database's); for another node, that node's pool,
// opened on first use. Errors wrap models.ErrQueueUnavailable when the node cannot
// be opened (unknown, retired, or its server does not answer).
func (s *Nodes) nodeConn(ctx context.Context, nodeID int64) (conn, error) {
	n, err := s.node(ctx, nodeID)
	if err != nil {
		return nil, err
	}
	return n.conn, nil
}

// nodeHandle is a node's connection and flavour as a statement needs them.
type nodeHandle struct {
	id      int64
	conn    conn
	db      *sql.DB // the node's pool (the control pool for the primary)
	mariadb bool
}

func (s *Nodes) node(ctx context.Context, nodeID int64) (nodeHandle, error) {
	nodeID = nodeOrPrimary(nodeID)
	if nodeID == models.PrimaryNodeID {
		return nodeHandle{id: models.PrimaryNodeID, conn: s.sql, db: s.pool, mariadb: s.mariadb}, nil
	}
	if s.npool == nil {
		// Open and WithTx always set the pool; a Store without one never sends a
		// queue's SQL to node 1 in place of its own node.
		return nodeHandle{}, fmt.Errorf("db node %d: this Store has no node pool: %w", nodeID, models.ErrQueueUnavailable)
	}
	p := s.npool
	p.mu.Lock()
	defer p.mu.Unlock()
	if n, ok := p.dbs[nodeID]; ok {
		return nodeHandle{id: nodeID, conn: n.db, db: n.db, mariadb: n.mariadb}, nil
	}
	var sealed sql.NullString
	var state string
	err := s.pool.QueryRowContext(ctx, "SELECT dsn_enc, state FROM db_nodes WHERE id = ?", nodeID).Scan(&sealed, &state)
	if err != nil {
		return nodeHandle{}, fmt.Errorf("db node %d: %w", nodeID, notFound(err, "node"))
	}
	if !sealed.Valid || state == string(models.NodeRetired) {
		return nodeHandle{}, fmt.Errorf("db node %d is %s: %w", nodeID, state, models.ErrQueueUnavailable)
	}
	dsn, err := s.keys.Open(sealed.String)
	if err != nil {
		return nodeHandle{}, fmt.Errorf("open dsn of node %d: %w", nodeID, err)
	}
	cfg, err := NormalizeNodeDSN(dsn) // a stored DSN is neutralised whatever it says
	if err != nil {
		return nodeHandle{}, err
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nodeHandle{}, fmt.Errorf("open db node %d: %w", nodeID, err)
	}
	db.SetMaxOpenConns(p.poolSize)
	db.SetMaxIdleConns(p.poolSize)
	db.SetConnMaxLifetime(time.Hour)
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		db.Close()
		return nodeHandle{}, fmt.Errorf("db node %d at %s: %w: %w", nodeID, cfg.Addr, models.ErrQueueUnavailable, err)
	}
	n := &nodeDB{db: db, mariadb: strings.Contains(strings.ToLower(version), "mariadb")}
	p.dbs[nodeID] = n
	return nodeHandle{id: nodeID, conn: db, db: db, mariadb: n.mariadb}, nil
}

// QueueNode returns the db node queue id lives on (cached: queues never move).
// Errors: ErrNotFound for an unknown queue.
func (s *Nodes) QueueNode(ctx context.Context, queueID int64) (int64, error) {
	m, err := s.queueNodes(ctx, []int64{queueID})
	if err != nil {
		return 0, err
	}
	return m[queueID], nil
}

// queueNodes returns the node of each listed queue, reading the misses of the
// cache in one statement: a queue placed on a node added after this process
// started is a miss, read from the queues table. A Store without a node pool
// (none is built so: Open and WithTx set it) reads every queue's node, never
// assuming node 1. A queue that does not exist makes it return an error wrapping
// ErrNotFound.
func (s *Nodes) queueNodes(ctx context.Context, queueIDs []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(queueIDs))
	var miss []int64
	if s.npool == nil {
		miss = queueIDs
	} else {
		s.npool.qmu.RLock()
		for _, q := range queueIDs {
			if n, ok := s.npool.queueNode[q]; ok {
				out[q] = n
			} else {
				miss = append(miss, q)
			}
		}
		s.npool.qmu.RUnlock()
	}
	if len(miss) == 0 {
		return out, nil
	}
	rows, err := s.sql.QueryContext(ctx, "SELECT id, node_id FROM queues WHERE id IN ("+idList(miss)+")")
	if err != nil {
		return nil, fmt.Errorf("read nodes of queues: %w", err)
	}
	defer rows.Close()
	var found []queueRow
	for rows.Next() {
		var r queueRow
		if err := rows.Scan(&r.ID, &r.NodeID); err != nil {
			return nil, err
		}
		found = append(found, r)
		out[r.ID] = nodeOrPrimary(r.NodeID)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if s.npool != nil {
		s.npool.remember(found)
	}
	for _, q := range miss {
		if _, ok := out[q]; !ok {
			return out, fmt.Errorf("queue %d: %w", q, models.ErrNotFound)
		}
	}
	return out, nil
}

// queueConn returns the connection for queue-table SQL on queue id's node.
func (s *Nodes) queueConn(ctx context.Context, queueID int64) (conn, error) {
	h, err := s.queueHandle(ctx, queueID)
	return h.conn, err
}

func (s *Nodes) queueHandle(ctx context.Context, queueID int64) (nodeHandle, error) {
	n, err := s.QueueNode(ctx, queueID)
	if err != nil {
		return nodeHandle{}, err
	}
	return s.node(ctx, n)
}

// byNode groups queue ids by their node, keeping each group in the given order,
// and lists the nodes in order of first appearance.
func (s *Nodes) byNode(ctx context.Context, queueIDs []int64) ([]int64, map[int64][]int64, error) {
	nodes, err := s.queueNodes(ctx, queueIDs)
	if err != nil {
		return nil, nil, err
	}
	var order []int64
	out := map[int64][]int64{}
	for _, q := range queueIDs {
		n := nodes[q]
		if _, ok := out[n]; !ok {
			order = append(order, n)
		}
		out[n] = append(out[n], q)
	}
	return order, out, nil
}

// QueueNodes returns the db node of each listed queue (cached: queues never move;
// misses are read in one statement). Errors wrap ErrNotFound for an unknown queue.
func (s *Nodes) QueueNodes(ctx context.Context, queueIDs []int64) (map[int64]int64, error) {
	return s.queueNodes(ctx, queueIDs)
}

// NodesPing pings every db node that is not retired, node 1 included (one control
// statement for the list, then one ping per node, each within ctx), and returns
// each node's error, nil when it answered.
func (s *Nodes) NodesPing(ctx context.Context) (map[int64]error, error) {
	var ids []int64
	if err := s.db.WithContext(ctx).Raw("SELECT id FROM db_nodes WHERE state <> ? ORDER BY id", string(models.NodeRetired)).Scan(&ids).Error; err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	out := make(map[int64]error, len(ids))
	for _, id := range ids {
		h, err := s.node(ctx, id)
		if err == nil {
			err = h.db.PingContext(ctx)
		}
		if ctx.Err() == nil {
			if err != nil {
				s.NodeFailed(id, err)
			} else {
				s.NodeAnswered(id)
			}
		}
		out[id] = err
	}
	return out, nil
}

// NodesOpened reports whether this Store has opened a db node other than node 1
// (so it may have written XA branches).
func (s *Nodes) NodesOpened() bool {
	if s.npool == nil {
		return false
	}
	s.npool.mu.Lock()
	defer s.npool.mu.Unlock()
	return len(s.npool.dbs) > 0
}
