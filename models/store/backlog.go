package store

import (
	"context"
	"fmt"
)

// GroupBacklogs returns, for each listed group that has any, how many messages wait
// in its retry topic and how many dead letters are pending: two grouped COUNT
// statements over the (group_id, …) indexes, for metrics sampling (not per message).
func (s *Store) GroupBacklogs(ctx context.Context, groupIDs []int64) (retry, dead map[int64]int64, err error) {
	retry, dead = map[int64]int64{}, map[int64]int64{}
	if len(groupIDs) == 0 {
		return retry, dead, nil
	}
	ids := idList(groupIDs)
	for _, q := range []struct {
		sql string
		out map[int64]int64
	}{
		{"SELECT group_id, COUNT(*) FROM retry_messages WHERE group_id IN (" + ids + ") GROUP BY group_id", retry},
		{"SELECT group_id, COUNT(*) FROM dead_letters WHERE group_id IN (" + ids + ") AND state = 'pending' GROUP BY group_id", dead},
	} {
		rows, err := s.sql.QueryContext(ctx, q.sql)
		if err != nil {
			return nil, nil, fmt.Errorf("count group backlogs: %w", err)
		}
		for rows.Next() {
			var g, n int64
			if err := rows.Scan(&g, &n); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("count group backlogs: %w", err)
			}
			q.out[g] = n
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("count group backlogs: %w", err)
		}
	}
	return retry, dead, nil
}
