package store

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/models"
)

// nodeConn returns the connection that reaches the queue tables of db node nodeID.
// Until queue tables are reached through their node, only the primary (the control
// database, s.sql) is reachable; any other node is an error. The per-node pool
// replaces this function.
func (s *Store) nodeConn(_ context.Context, nodeID int64) (conn, error) {
	if nodeID != models.PrimaryNodeID {
		return nil, fmt.Errorf("queue tables on node %d: not reachable yet (only node %d is)", nodeID, models.PrimaryNodeID)
	}
	return s.sql, nil
}
