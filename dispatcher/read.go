package dispatcher

import (
	"cmp"
	"context"
	"time"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// readLimit caps rows per queue read.
const readLimit = 500

// step reads every dirty queue once for all the cursors owned on it, then cuts jobs.
func (d *Dispatcher) step(ctx context.Context) {
	d.finishTakeovers(ctx)
	for q := range d.dirtyQ {
		delete(d.dirtyQ, q)
		if more := d.readQueue(ctx, q); more {
			d.dirtyQ[q] = true
			d.wakeBy(d.now())
		}
	}
	d.cut(ctx)
}

// readQueue reads rows after each distinct read position of the queue's cursors
// (normally one: every cursor caught up), fans them out in memory, and reports
// whether more rows may be waiting.
func (d *Dispatcher) readQueue(ctx context.Context, q int64) (more bool) {
	byPos := map[int64][]*cursorState{}
	limits := map[int64]int{}
	for _, cs := range d.byQueue[q] {
		room := d.room(cs)
		if room <= 0 {
			continue
		}
		byPos[cs.readPos] = append(byPos[cs.readPos], cs)
		limits[cs.readPos] = min(cmp.Or(limits[cs.readPos], readLimit), room)
	}
	for pos, css := range byPos {
		limit := limits[pos]
		started := d.now()
		var read []notify.Row
		var headers map[int64]map[string]string
		if d.anyFiltered(css) {
			// Only cursors whose subscription filters on attributes read the headers column.
			rows, err := d.st.QueueScanAttributes(ctx, q, pos, limit)
			if err != nil {
				d.log.Warn("read queue", "queue", q, "err", err)
				return false
			}
			read, headers = make([]notify.Row, len(rows)), make(map[int64]map[string]string, len(rows))
			for i, r := range rows {
				read[i] = notify.Row{ID: r.ID, Tag: r.Tag, CreatedAt: r.CreatedAt, Key: r.Key}
				headers[r.ID] = r.Headers
			}
		} else {
			rows, err := d.st.QueueScan(ctx, q, pos, limit)
			if err != nil {
				d.log.Warn("read queue", "queue", q, "err", err)
				return false
			}
			read = make([]notify.Row, len(rows))
			for i, r := range rows {
				read[i] = notify.Row{ID: r.ID, Tag: r.Tag, CreatedAt: r.CreatedAt, Key: r.Key}
			}
		}
		for _, cs := range css {
			d.fanOutWith(cs, read, headers, started)
		}
		if len(read) == limit {
			more = true
		}
	}
	return more
}

// anyFiltered reports whether one of css has an attribute filter on its topic.
func (d *Dispatcher) anyFiltered(css []*cursorState) bool {
	for _, cs := range css {
		if d.subscription(cs).HasFilter() {
			return true
		}
	}
	return false
}

// passes reports whether row r goes to a cursor subscribed by sub: its tag passes
// the tag filter and, when sub filters on attributes, its headers pass the filter.
// Headers come from headers (a read of the headers column, keyed by id) or from the
// message a local notification carries; known is false when neither has them.
func passes(sub models.Subscription, r notify.Row, headers map[int64]map[string]string) (match, known bool) {
	if !sub.Matches(r.Tag) {
		return false, true
	}
	if !sub.HasFilter() {
		return true, true
	}
	if h, ok := headers[r.ID]; ok {
		return sub.MatchesAttributes(h), true
	}
	if r.Msg != nil {
		return sub.MatchesAttributes(r.Msg.Headers), true
	}
	return true, false
}

// Bodies a cursor keeps from notifications (pendingMsg.msg: local ones, and small
// flushes over Redis, notify.MaxBodyBytesPerPayload): only while it
// keeps up (fewer than bodyHoldPending messages waiting) and only bodies of at most
// bodyHoldBytes, so a slow group holds at most bodyHoldPending × bodyHoldBytes per
// cursor; the worker loads everything else from the queue table.
const (
	bodyHoldPending = 256
	bodyHoldBytes   = 64 << 10
)

// room is how many new rows cs takes: the room left in its span while its group
// runs and it is neither beyond the table's end nor held for a takeover, else 0.
func (d *Dispatcher) room(cs *cursorState) int {
	if cs.group.g.Status != models.GroupRunning || cs.beyond || cs.takeover != nil {
		return 0
	}
	return max(d.cfg.MaxSpan-cs.span(), 0)
}

// applyRows hands the rows a flush committed to one queue (a notification's, in id
// order) to each cursor of the queue whose read position is just before them, so
// those cursors need no queue read; any other cursor (behind, out of room, or the
// rows have gaps another writer may fill) has the queue read instead. A cursor
// already past the rows (a scan got there first, or this is the Redis copy of a
// local notification) ignores them.
func (d *Dispatcher) applyRows(ev notify.Event) {
	rows := ev.Rows
	first, last := rows[0].ID, rows[len(rows)-1].ID
	contiguous := last-first+1 == int64(len(rows))
	var at time.Time
	for _, cs := range d.byQueue[ev.Queue] {
		if cs.readPos >= last {
			continue
		}
		if !contiguous || cs.readPos+1 != first || d.room(cs) < len(rows) || !d.decidable(cs, rows) {
			// (A paused cursor marks the queue too; the read skips it. A cursor
			// filtering on attributes reads the queue for the headers a notification
			// over Redis does not carry.)
			d.dirtyQ[ev.Queue] = true
			continue
		}
		if at.IsZero() {
			at = d.now()
		}
		d.fanOut(cs, rows, at)
	}
}

// decidable reports whether cs's filters can be decided on rows as a notification
// carries them: always without an attribute filter, else only when every row
// carries its message (the in-process path, and notifications over Redis that
// carry bodies; others carry tags but no headers).
func (d *Dispatcher) decidable(cs *cursorState, rows []notify.Row) bool {
	if !d.subscription(cs).HasFilter() {
		return true
	}
	for _, r := range rows {
		if r.Msg == nil {
			return false
		}
	}
	return true
}

// fanOut applies rows (id order, all > cs.readPos) to one cursor: gaps become holes,
// matching rows become pending, filtered-out rows are done at once.
func (d *Dispatcher) fanOut(cs *cursorState, rows []notify.Row, at time.Time) {
	d.fanOutWith(cs, rows, nil, at)
}

// fanOutWith is fanOut with the rows' headers by id (nil when not read) for an
// attribute filter. A row whose headers are unknown is delivered: a filter miss
// costs a POST, never a message.
func (d *Dispatcher) fanOutWith(cs *cursorState, rows []notify.Row, headers map[int64]map[string]string, at time.Time) {
	sub := d.subscription(cs)
	nowMS := at.UnixMilli()
	for _, r := range rows {
		if r.ID <= cs.readPos {
			continue
		}
		for id := cs.readPos + 1; id < r.ID; id++ {
			cs.holes[id] = nowMS
		}
		cs.readPos = r.ID
		if _, done := cs.done[r.ID]; done {
			continue // reported by the previous owner (takeover.go)
		}
		if match, _ := passes(sub, r, headers); match {
			p := pendingMsg{offset: r.ID, createdAt: r.CreatedAt, key: r.Key}
			if r.Msg != nil && len(r.Msg.Body) <= bodyHoldBytes && len(cs.pending) < bodyHoldPending {
				p.msg = r.Msg
			}
			cs.pending = append(cs.pending, p)
		} else {
			cs.markDone(r.ID)
		}
	}
	cs.advance()
}

func (d *Dispatcher) subscription(cs *cursorState) models.Subscription {
	topics := d.queueTopic(cs.queueID)
	for _, s := range cs.group.g.Subscriptions {
		if s.TopicID == topics {
			return s
		}
	}
	return models.Subscription{}
}

// reReadHoles re-reads every open hole of the queue's cursors in one statement,
// dispatches rows that appeared and closes holes that a read started at least
// gap_timeout after they were first seen still misses (InnoDB commits ids out of order).
func (d *Dispatcher) reReadHoles(ctx context.Context, q int64) {
	var ids []int64
	seen := map[int64]bool{}
	for _, cs := range d.byQueue[q] {
		for id := range cs.holes {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	started := d.now().UnixMilli()
	found, headers, err := d.rowsByIDs(ctx, q, ids)
	if err != nil {
		d.log.Warn("re-read holes", "queue", q, "err", err)
		return
	}
	gap := d.cfg.GapTimeout.Milliseconds()
	for _, cs := range d.byQueue[q] {
		sub := d.subscription(cs)
		for id, first := range cs.holes {
			if r, ok := found[id]; ok {
				if match, _ := passes(sub, notify.Row{ID: r.ID, Tag: r.Tag}, headers); match {
					cs.holeFound(id, r.CreatedAt, r.Key)
				} else {
					cs.markDone(id)
				}
				continue
			}
			if started-first >= gap {
				metrics.HolesClosed.Inc()
				cs.markDone(id)
				cs.closed[id] = started + gap // checked once more later (late rows)
			}
		}
		cs.advance()
	}
}

// poll is the fallback wake-up: one MAX(id) statement for all owned queues wakes
// the cursors behind, and open holes are re-read.
func (d *Dispatcher) poll(ctx context.Context) {
	if len(d.byQueue) == 0 {
		return
	}
	qs := make([]int64, 0, len(d.byQueue))
	for q := range d.byQueue {
		qs = append(qs, q)
	}
	maxIDs, err := d.st.QueueMaxIDs(ctx, qs)
	if err != nil {
		// A db node that does not answer leaves its queues out; the others still poll.
		d.log.Warn("fallback poll", "err", err)
		if len(maxIDs) == 0 {
			return
		}
	}
	d.maxIDs = maxIDs
	for q, m := range maxIDs {
		holes := false
		for _, cs := range d.byQueue[q] {
			if cs.readPos < m {
				d.dirtyQ[q] = true
			}
			if cs.committed > m && !cs.beyond {
				// Beyond the table's end: a restore or a lagging replica. Do not serve it;
				// make the queue read-only so no new offset can collide, and alert.
				cs.beyond = true
				metrics.CursorsBeyondMax.Inc()
				d.log.Error("cursor beyond queue max offset; not serving it and making the queue read-only", "cursor", cs.id, "queue", q, "offset", cs.committed, "max", m)
				if err := d.st.QueueSetState(ctx, q, models.QueueReadOnly); err != nil {
					d.log.Warn("make queue read-only", "queue", q, "err", err)
				}
			}
			holes = holes || len(cs.holes) > 0 || len(cs.closed) > 0
		}
		if holes {
			d.reReadHoles(ctx, q)
			d.checkClosedHoles(ctx, q)
		}
	}
	d.lastPoll = d.now()
}

// checkClosedHoles re-reads, once, holes closed as rollbacks whose second look is
// due. A row found then committed after gap_timeout: it is delivered through the
// retry topic and counted in herald_late_rows_total, which should alert.
func (d *Dispatcher) checkClosedHoles(ctx context.Context, q int64) {
	nowMS := d.now().UnixMilli()
	due := map[*cursorState][]int64{}
	var ids []int64
	for _, cs := range d.byQueue[q] {
		for id, at := range cs.closed {
			if at <= nowMS {
				due[cs] = append(due[cs], id)
				ids = append(ids, id)
				delete(cs.closed, id)
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	found, headers, err := d.rowsByIDs(ctx, q, ids)
	if err != nil || len(found) == 0 {
		return
	}
	for cs, list := range due {
		sub := d.subscription(cs)
		var late []int64
		for _, id := range list {
			if r, ok := found[id]; ok {
				if match, _ := passes(sub, notify.Row{ID: r.ID, Tag: r.Tag}, headers); match {
					late = append(late, id)
				}
			}
		}
		if len(late) == 0 {
			continue
		}
		metrics.LateRows.Add(float64(len(late)))
		d.log.Error("rows committed after gap_timeout; delivering them through the retry topic", "queue", q, "group", cs.group.g.Name, "count", len(late))
		if err := d.st.RetryAddLate(ctx, cs.groupID, q, late); err != nil {
			d.log.Warn("queue late rows for retry", "err", err)
			continue
		}
		cs.group.health.retryDueBy(d.now())
	}
}

// rowsByIDs re-reads the listed ids of queue q by id, with their headers (by id)
// only when a cursor of q filters on attributes.
func (d *Dispatcher) rowsByIDs(ctx context.Context, q int64, ids []int64) (map[int64]store.RowMeta, map[int64]map[string]string, error) {
	found := make(map[int64]store.RowMeta, len(ids))
	if !d.anyFiltered(d.byQueue[q]) {
		rows, err := d.st.QueueRowsByIDs(ctx, q, ids)
		for _, r := range rows {
			found[r.ID] = r
		}
		return found, nil, err
	}
	rows, err := d.st.QueueRowsByIDsAttributes(ctx, q, ids)
	headers := make(map[int64]map[string]string, len(rows))
	for _, r := range rows {
		found[r.ID] = r.RowMeta
		headers[r.ID] = r.Headers
	}
	return found, headers, err
}
