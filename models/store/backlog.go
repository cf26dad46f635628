package store

import (
	"context"
	"fmt"
)

// GroupBacklogs returns, for each listed group that has any, how many messages wait
// in its retry topic and how many dead letters are pending: one statement of two
// grouped COUNTs over the (group_id, …) indexes, for metrics sampling (not per
// message).
func (s *Store) GroupBacklogs(ctx context.Context, groupIDs []int64) (retry, dead map[int64]int64, err error) {
	retry, dead = map[int64]int64{}, map[int64]int64{}
	if len(groupIDs) == 0 {
		return retry, dead, nil
	}
	ids := idList(groupIDs)
	rows, err := s.sql.QueryContext(ctx, "SELECT 'r', group_id, COUNT(*) FROM retry_messages WHERE group_id IN ("+ids+") GROUP BY group_id"+
		" UNION ALL SELECT 'd', group_id, COUNT(*) FROM dead_letters WHERE group_id IN ("+ids+") AND state = 'pending' GROUP BY group_id")
	if err != nil {
		return nil, nil, fmt.Errorf("count group backlogs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var g, n int64
		if err := rows.Scan(&kind, &g, &n); err != nil {
			return nil, nil, fmt.Errorf("count group backlogs: %w", err)
		}
		if kind == "r" {
			retry[g] = n
		} else {
			dead[g] = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("count group backlogs: %w", err)
	}
	return retry, dead, nil
}
