package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// StatsRetention is how long per-minute rollups are kept: 7 days.
const StatsRetention = 7 * 24 * time.Hour

// StatsAdd adds counts to the rollup row of (minute, groupID, topicID) in one upsert.
// minute is truncated to the minute (UTC). Use groupID 0 for a topic's published
// count and topicID 0 when a group's deliveries are not split by topic. Counts are
// messages; all three may be 0. The api role calls it for published messages; the
// dispatcher for delivered and failed ones when it applies worker reports. Safe from
// many processes at once (the row is summed in the database).
func (s *Store) StatsAdd(ctx context.Context, minute time.Time, groupID, topicID int64, published, delivered, failed int64) error {
	_, err := s.sql.ExecContext(ctx, `INSERT INTO stats_minutely (minute, group_id, topic_id, published, delivered, failed)
		VALUES (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE published = published + VALUES(published),
		delivered = delivered + VALUES(delivered), failed = failed + VALUES(failed)`,
		minute.UTC().Truncate(time.Minute), groupID, topicID, published, delivered, failed)
	if err != nil {
		return fmt.Errorf("add stats for group %d topic %d: %w", groupID, topicID, err)
	}
	return nil
}

// StatsDelta is one group's delivered and failed messages to add to a minute's
// rollup row (StatsAddDeliveries).
type StatsDelta struct {
	GroupID           int64
	Delivered, Failed int64
}

// StatsAddDeliveries adds each group's delivered and failed counts to minute's
// rollup rows (topic 0) as StatsAdd does, 500 groups per statement: the owning
// dispatcher's per-tick flush.
func (s *Store) StatsAddDeliveries(ctx context.Context, minute time.Time, deltas []StatsDelta) error {
	m := minute.UTC().Truncate(time.Minute)
	for start := 0; start < len(deltas); start += 500 {
		chunk := deltas[start:min(start+500, len(deltas))]
		var sb strings.Builder
		args := make([]any, 0, 4*len(chunk))
		for i, d := range chunk {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString("(?, ?, 0, 0, ?, ?)")
			args = append(args, m, d.GroupID, d.Delivered, d.Failed)
		}
		_, err := s.sql.ExecContext(ctx, "INSERT INTO stats_minutely (minute, group_id, topic_id, published, delivered, failed) VALUES "+sb.String()+
			" ON DUPLICATE KEY UPDATE delivered = delivered + VALUES(delivered), failed = failed + VALUES(failed)", args...)
		if err != nil {
			return fmt.Errorf("add delivery stats of %d groups: %w", len(chunk), err)
		}
	}
	return nil
}

// StatsSampleLag records each group's lag (messages) for minute, keeping the largest
// value sampled in the minute, so several api instances sampling at once agree. One
// statement per 500 groups with a lag; a lag of 0 writes nothing (it could not raise
// the minute's value, and a minute without a row reads as 0), so an idle
// installation's samples cost no write.
func (s *Store) StatsSampleLag(ctx context.Context, minute time.Time, lags map[int64]int64) error {
	m := minute.UTC().Truncate(time.Minute)
	ids := make([]int64, 0, len(lags))
	for id, n := range lags {
		if n > 0 {
			ids = append(ids, id)
		}
	}
	for start := 0; start < len(ids); start += 500 {
		end := min(start+500, len(ids))
		var sb strings.Builder
		args := make([]any, 0, 3*(end-start))
		for i, id := range ids[start:end] {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString("(?, ?, 0, ?)")
			args = append(args, m, id, lags[id])
		}
		_, err := s.sql.ExecContext(ctx, "INSERT INTO stats_minutely (minute, group_id, topic_id, lag_messages) VALUES "+sb.String()+
			" ON DUPLICATE KEY UPDATE lag_messages = GREATEST(lag_messages, VALUES(lag_messages))", args...)
		if err != nil {
			return fmt.Errorf("sample lag: %w", err)
		}
	}
	return nil
}

// StatsPoint is one minute of a rollup series: messages published, delivered and
// failed in the minute, and the lag (messages) sampled in it.
type StatsPoint struct {
	Minute    time.Time
	Published int64
	Delivered int64
	Failed    int64
	Lag       int64
}

// StatsScope selects the rows a series sums: GroupID > 0 one group's rows, TopicID >
// 0 one topic's published rows, neither the whole installation.
type StatsScope struct {
	GroupID, TopicID int64
}

// StatsSeries returns one point per minute in [from, to), minutes without rows
// filled with zeros, oldest first.
func (s *Store) StatsSeries(ctx context.Context, scope StatsScope, from, to time.Time) ([]StatsPoint, error) {
	from, to = from.UTC().Truncate(time.Minute), to.UTC().Truncate(time.Minute)
	q := s.db.WithContext(ctx).Table("stats_minutely").
		Select("minute, SUM(published) AS published, SUM(delivered) AS delivered, SUM(failed) AS failed, SUM(lag_messages) AS lag").
		Where("minute >= ? AND minute < ?", from, to).Group("minute")
	switch {
	case scope.GroupID > 0:
		q = q.Where("group_id = ?", scope.GroupID)
	case scope.TopicID > 0:
		q = q.Where("topic_id = ? AND group_id = 0", scope.TopicID)
	}
	var rows []StatsPoint
	if err := q.Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read stats: %w", err)
	}
	byMinute := map[int64]StatsPoint{}
	for _, r := range rows {
		byMinute[r.Minute.Unix()] = r
	}
	var out []StatsPoint
	for m := from; m.Before(to); m = m.Add(time.Minute) {
		p := byMinute[m.Unix()]
		p.Minute = m
		out = append(out, p)
	}
	return out, nil
}

// StatsTotals sums delivered and failed per group, and published per topic, since t.
type StatsTotals struct {
	GroupDelivered, GroupFailed map[int64]int64
	TopicPublished              map[int64]int64
}

// StatsTotalsSince returns the sums since t (minute granularity), for lists and the
// overview's failing groups.
func (s *Store) StatsTotalsSince(ctx context.Context, t time.Time) (StatsTotals, error) {
	out := StatsTotals{GroupDelivered: map[int64]int64{}, GroupFailed: map[int64]int64{}, TopicPublished: map[int64]int64{}}
	var rows []struct {
		GroupID, TopicID             int64
		Published, Delivered, Failed int64
	}
	err := s.db.WithContext(ctx).Raw(`SELECT group_id, topic_id, SUM(published) AS published, SUM(delivered) AS delivered, SUM(failed) AS failed
		FROM stats_minutely WHERE minute >= ? GROUP BY group_id, topic_id`, t.UTC().Truncate(time.Minute)).Scan(&rows).Error
	if err != nil {
		return out, fmt.Errorf("read stats totals: %w", err)
	}
	for _, r := range rows {
		if r.GroupID == 0 {
			out.TopicPublished[r.TopicID] += r.Published
			continue
		}
		out.GroupDelivered[r.GroupID] += r.Delivered
		out.GroupFailed[r.GroupID] += r.Failed
	}
	return out, nil
}

// StatsPrune deletes rollup rows older than StatsRetention before now.
func (s *Store) StatsPrune(ctx context.Context, now time.Time) error {
	_, err := s.sql.ExecContext(ctx, "DELETE FROM stats_minutely WHERE minute < ?", now.UTC().Add(-StatsRetention))
	if err != nil {
		return fmt.Errorf("prune stats: %w", err)
	}
	return nil
}
