package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm/clause"

	"github.com/heraldhq/herald/models"
)

// CursorPosition is one cursor as the console and admin API show it: the committed
// offset, the queue's max offset and the lag (messages: those after the committed
// offset plus the ids the commit lists as not done). OldestUndoneMS is the Unix ms
// creation time of the first message from the lowest listed id, or after the
// committed offset (0 when nothing waits), so lag in seconds is now minus it.
type CursorPosition struct {
	CursorID       int64
	GroupID        int64
	QueueID        int64
	TopicID        int64
	Topic          string
	Offset         int64
	MaxOffset      int64
	Lag            int64
	Holes          int
	Version        int64
	Owner          string
	OldestUndoneMS int64
	// Undone are the ids at or below Offset the commit lists as not done (holes, and
	// messages pending or in flight), as ranges.
	Undone []models.Hole
	// Unreachable: the queue's db node did not answer the read (or is marked down),
	// so MaxOffset is the committed offset and Lag counts the listed holes only.
	Unreachable bool
	// firstUndone is the lowest id the commit lists as not done (hole, or a message
	// pending or in flight), or Offset+1.
	firstUndone int64
}

// CursorsReset moves a group's cursors to `to` — models.ConsumeEarliest,
// models.ConsumeLatest or an RFC 3339 timestamp — for every queue or only the listed
// queue ids, clears their holes and bumps their versions, so the owning dispatcher's
// next fenced commit fails and it reloads the cursor. The retry topic is
// untouched. It returns the cursors as reset, with the versions written (the rows
// are locked); a listed queue the group has no cursor on gives a *ValidationError.
func (s *Cursors) CursorsReset(ctx context.Context, groupID int64, to string, queues []int64) ([]CursorPosition, error) {
	var out []CursorPosition
	err := s.store().WithTx(ctx, func(tx *Store) error {
		var rows []cursorRow
		// Locked, so the versions returned are exactly the ones written (a claim may race).
		if err := tx.db.Clauses(clause.Locking{Strength: "UPDATE"}).Where("group_id = ?", groupID).Order("queue_id").Find(&rows).Error; err != nil {
			return fmt.Errorf("read cursors of group %d: %w", groupID, err)
		}
		var v models.ValidationError
		for i, q := range queues {
			if !slices.ContainsFunc(rows, func(r cursorRow) bool { return r.QueueID == q }) {
				v.Add(fmt.Sprintf("/queues/%d", i), fmt.Sprintf("the group reads no queue %d", q))
			}
		}
		if err := v.Err(); err != nil {
			return err
		}
		for _, r := range rows {
			if len(queues) > 0 && !slices.Contains(queues, r.QueueID) {
				continue
			}
			off, err := tx.startOffset(ctx, r.QueueID, to)
			if err != nil {
				return err
			}
			err = tx.db.Exec("UPDATE cursors SET committed_offset = ?, holes = '[]', version = version + 1, updated_at = NOW(3) WHERE id = ?", off, r.ID).Error
			if err != nil {
				return fmt.Errorf("reset cursor %d: %w", r.ID, err)
			}
			out = append(out, CursorPosition{CursorID: r.ID, GroupID: groupID, QueueID: r.QueueID, Offset: off, Version: r.Version + 1, Owner: r.Owner})
		}
		return nil
	})
	return out, err
}

// GroupPositions returns every cursor of the listed groups with its queue's max
// offset and lag in messages, ordered by group and queue. A cursor whose queue's db
// node does not answer (or is marked down) is listed Unreachable, with MaxOffset at
// its committed offset (lag: its listed holes only). withAge also reads the
// creation time of each lagging cursor's next message (one UNION statement), for
// lag in seconds; leave it off for long lists.
func (s *Cursors) GroupPositions(ctx context.Context, groupIDs []int64, withAge bool) ([]CursorPosition, error) {
	if len(groupIDs) == 0 {
		return nil, nil
	}
	var rows []struct {
		ID              int64
		GroupID         int64
		QueueID         int64
		CommittedOffset int64
		Holes           []byte
		Version         int64
		Owner           string
		TopicID         int64
		Name            string
	}
	err := s.db.WithContext(ctx).Raw(`SELECT c.id, c.group_id, c.queue_id, c.committed_offset, c.holes, c.version, c.owner, q.topic_id, t.name
		FROM cursors c JOIN queues q ON q.id = c.queue_id JOIN topics t ON t.id = q.topic_id
		WHERE c.group_id IN ? ORDER BY c.group_id, c.queue_id`, groupIDs).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read cursor positions: %w", err)
	}
	qids := make([]int64, 0, len(rows))
	for _, r := range rows {
		if !slices.Contains(qids, r.QueueID) {
			qids = append(qids, r.QueueID)
		}
	}
	maxes, err := s.store().Queues().QueueMaxIDs(ctx, qids)
	if err != nil && !OnlyUnreachable(err) {
		return nil, err
	}
	out := make([]CursorPosition, len(rows))
	for i, r := range rows {
		cur := toCursor(cursorRow{Holes: r.Holes})
		maxOffset, read := maxes[r.QueueID]
		if !read {
			maxOffset = r.CommittedOffset // its node did not answer: lag past the commit unknown
		}
		out[i] = CursorPosition{CursorID: r.ID, GroupID: r.GroupID, QueueID: r.QueueID, TopicID: r.TopicID, Topic: r.Name,
			Offset: r.CommittedOffset, MaxOffset: maxOffset, Version: r.Version, Owner: r.Owner, Holes: len(cur.Holes), Undone: cur.Holes,
			Unreachable: !read}
		// Lag counts the ids the commit lists as not done too: the dispatcher commits past
		// messages still pending or in flight, listing them with the holes.
		out[i].Lag = max(out[i].MaxOffset-out[i].Offset, 0)
		out[i].firstUndone = r.CommittedOffset + 1
		for _, h := range cur.Holes {
			out[i].Lag += h.To - h.From + 1
			out[i].firstUndone = min(out[i].firstUndone, h.From)
		}
	}
	if withAge {
		if err := s.fillOldest(ctx, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fillOldest reads the creation time of the first message after each lagging cursor.
func (s *Cursors) fillOldest(ctx context.Context, ps []CursorPosition) error {
	var qids []int64
	for _, p := range ps {
		if p.Lag > 0 {
			qids = append(qids, p.QueueID)
		}
	}
	if len(qids) == 0 {
		return nil
	}
	nodes, err := s.store().Nodes().queueNodes(ctx, qids)
	if err != nil {
		return fmt.Errorf("read oldest undone messages: %w", err)
	}
	parts := map[int64][]string{}
	args := map[int64][]any{}
	var order []int64
	for i, p := range ps {
		if p.Lag == 0 {
			continue
		}
		n := nodes[p.QueueID]
		if _, ok := parts[n]; !ok {
			order = append(order, n)
		}
		// From the first listed id: its row, or the next one (older than the oldest undone
		// message by at most the done rows between listed ranges).
		parts[n] = append(parts[n], fmt.Sprintf("(SELECT %d AS i, created_at FROM %s WHERE id >= ? ORDER BY id LIMIT 1)", i, models.QueueTableName(p.QueueID)))
		args[n] = append(args[n], p.firstUndone)
	}
	for _, n := range order {
		if s.store().Nodes().skipNode(n) {
			continue // its lag age stays unknown (0)
		}
		nctx, cancel := s.store().Nodes().NodeContext(ctx, n)
		err := s.fillOldestOn(nctx, n, parts[n], args[n], ps)
		cancel()
		if err != nil && !s.store().Nodes().NodeOutage(n, err) {
			return err
		}
	}
	return nil
}

func (s *Cursors) fillOldestOn(ctx context.Context, node int64, parts []string, args []any, ps []CursorPosition) error {
	c, err := s.store().Nodes().nodeConn(ctx, node)
	if err != nil {
		return fmt.Errorf("read oldest undone messages on node %d: %w", node, err)
	}
	for start := 0; start < len(parts); start += 200 {
		end := min(start+200, len(parts))
		rows, err := c.QueryContext(ctx, strings.Join(parts[start:end], " UNION ALL "), args[start:end]...)
		if err != nil {
			return fmt.Errorf("read oldest undone messages: %w", err)
		}
		for rows.Next() {
			var i int
			var at int64
			if err := rows.Scan(&i, &at); err != nil {
				rows.Close()
				return err
			}
			ps[i].OldestUndoneMS = at
		}
		rows.Close()
	}
	return nil
}

// GroupLags sums lag in messages per group over all cursors, as GroupPositions
// counts it (after the committed offset, plus the ids the commit lists as not done:
// a paused group's or a blocked ordered queue's read messages are committed past
// and listed), for lists, the overview's total and the lag samples (two statements
// whatever the number of groups).
func (s *Cursors) GroupLags(ctx context.Context) (map[int64]int64, error) {
	var rows []struct {
		GroupID         int64
		QueueID         int64
		CommittedOffset int64
		Holes           []byte
	}
	if err := s.db.WithContext(ctx).Raw("SELECT group_id, queue_id, committed_offset, holes FROM cursors").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read cursors: %w", err)
	}
	var qids []int64
	seen := map[int64]bool{}
	for _, r := range rows {
		if !seen[r.QueueID] {
			seen[r.QueueID] = true
			qids = append(qids, r.QueueID)
		}
	}
	maxes, err := s.store().Queues().QueueMaxIDs(ctx, qids)
	if err != nil && !OnlyUnreachable(err) {
		return nil, err
	}
	out := map[int64]int64{}
	for _, r := range rows {
		if m, ok := maxes[r.QueueID]; ok { // a queue on a down node counts its listed holes only
			out[r.GroupID] += max(m-r.CommittedOffset, 0)
		}
		for _, h := range toCursor(cursorRow{Holes: r.Holes}).Holes {
			out[r.GroupID] += h.To - h.From + 1
		}
	}
	return out, nil
}

// LagAge turns an OldestUndoneMS into seconds of lag at now (0 when nothing waits).
func LagAge(oldestMS int64, now time.Time) float64 {
	if oldestMS == 0 {
		return 0
	}
	return max(float64(now.UnixMilli()-oldestMS)/1000, 0)
}
