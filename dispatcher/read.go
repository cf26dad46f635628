package dispatcher

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/stagetrace"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// readLimit caps rows per queue read.
const readLimit = 500

// queueReader reads the queue tables for the cursors a dispatcher owns: once per
// queue for all its cursors, from the queues marked dirty (notified, polled, a
// cursor claimed); rows a local notification carries are fanned out with no read;
// the fallback poll reads MAX(id) of every owned queue, and open holes are re-read
// until they fill or close as rollbacks after gap_timeout. It runs on the
// dispatcher's loop.
type queueReader struct {
	st  readStore
	cfg config.Dispatcher
	log *slog.Logger
	now Clock
	// wakeBy asks the loop to run again by t.
	wakeBy func(t time.Time)

	byQueue     map[int64][]*cursorState // the owned cursors, by queue
	dirty       map[int64]bool           // queues to read at the next step
	queueTopics map[int64]int64          // queue → topic id (queueTopic)
	maxIDs      map[int64]int64          // MAX(id) by queue at the last poll
	lastPoll    time.Time
	// reached is, by queue, since when (Unix ms) every poll and hole re-read reached
	// its node; a failed one deletes the entry. A hole's gap_timeout runs only over
	// that time (reReadHoles), so a node that was away gets the whole timeout to
	// show rows it holds (a prepared branch recovery commits) once it answers.
	reached map[int64]int64
}

// readStore is the part of the store a queueReader uses. store.Sides is the
// production implementation.
type readStore interface {
	QueueScan(ctx context.Context, queueID, after int64, limit int) ([]store.RowMeta, error)
	QueueScanAttributes(ctx context.Context, queueID, after int64, limit int) ([]store.RowAttributes, error)
	QueueRowsByIDs(ctx context.Context, queueID int64, ids []int64) ([]store.RowMeta, error)
	QueueRowsByIDsAttributes(ctx context.Context, queueID int64, ids []int64) ([]store.RowAttributes, error)
	QueueMaxIDs(ctx context.Context, queueIDs []int64) (map[int64]int64, error)
	QueueSetState(ctx context.Context, queueID int64, st models.QueueState) error
	QueueTopicIDs(ctx context.Context) (map[int64]int64, error)
	RetryAddLate(ctx context.Context, groupID, queueID int64, offsets []int64) error
}

var _ readStore = store.Sides{}

func newQueueReader(st readStore, cfg config.Dispatcher, log *slog.Logger, now Clock, wakeBy func(time.Time)) *queueReader {
	return &queueReader{st: st, cfg: cfg, log: log, now: now, wakeBy: wakeBy, byQueue: map[int64][]*cursorState{}, dirty: map[int64]bool{}, reached: map[int64]int64{}}
}

// add starts reading for cs, from its read position at the next step.
func (rd *queueReader) add(cs *cursorState) {
	rd.byQueue[cs.queueID] = append(rd.byQueue[cs.queueID], cs)
	rd.dirty[cs.queueID] = true
}

// remove stops reading for cs.
func (rd *queueReader) remove(cs *cursorState) {
	rd.byQueue[cs.queueID] = slices.DeleteFunc(rd.byQueue[cs.queueID], func(x *cursorState) bool { return x == cs })
	if len(rd.byQueue[cs.queueID]) == 0 {
		delete(rd.byQueue, cs.queueID)
		delete(rd.reached, cs.queueID)
	}
}

// owns reports whether a cursor of queue q is owned.
func (rd *queueReader) owns(q int64) bool { return len(rd.byQueue[q]) > 0 }

// markAll marks every owned queue to read (a local notification was dropped).
func (rd *queueReader) markAll() {
	for q := range rd.byQueue {
		rd.dirty[q] = true
	}
}

// onRows applies a notification of queue q: its rows when it carries them
// (applyRows), else the queue is read at the next step.
func (rd *queueReader) onRows(ev notify.Event) {
	if !rd.owns(ev.Queue) {
		return
	}
	if len(ev.Rows) == 0 {
		rd.dirty[ev.Queue] = true
		return
	}
	if at := stagetrace.Now(); !at.IsZero() {
		for _, r := range ev.Rows {
			stagetrace.Mark(stagetrace.DispatchEvent, at, ev.Queue, r.ID)
		}
	}
	rd.applyRows(ev)
}

// readDirty reads every dirty queue once for all the cursors owned on it; a queue
// with more rows waiting stays dirty and the loop runs again at once.
func (rd *queueReader) readDirty(ctx context.Context) {
	for q := range rd.dirty {
		delete(rd.dirty, q)
		if more := rd.readQueue(ctx, q); more {
			rd.dirty[q] = true
			rd.wakeBy(rd.now())
		}
	}
}

// readQueue reads rows after each distinct read position of the queue's cursors
// (normally one: every cursor caught up), fans them out in memory, and reports
// whether more rows may be waiting.
func (rd *queueReader) readQueue(ctx context.Context, q int64) (more bool) {
	byPos := map[int64][]*cursorState{}
	limits := map[int64]int{}
	for _, cs := range rd.byQueue[q] {
		room := rd.room(cs)
		if room <= 0 {
			continue
		}
		byPos[cs.readPos] = append(byPos[cs.readPos], cs)
		limits[cs.readPos] = min(cmp.Or(limits[cs.readPos], readLimit), room)
	}
	for pos, css := range byPos {
		limit := limits[pos]
		started := rd.now()
		var read []notify.Row
		var headers map[int64]map[string]string
		if rd.anyFiltered(css) {
			// Only cursors whose subscription filters on attributes read the headers column.
			rows, err := rd.st.QueueScanAttributes(ctx, q, pos, limit)
			if err != nil {
				rd.log.Warn("read queue", "queue", q, "err", err)
				return false
			}
			read, headers = make([]notify.Row, len(rows)), make(map[int64]map[string]string, len(rows))
			for i, r := range rows {
				read[i] = notify.Row{ID: r.ID, Tag: r.Tag, CreatedAt: r.CreatedAt, Key: r.Key}
				headers[r.ID] = r.Headers
			}
		} else {
			rows, err := rd.st.QueueScan(ctx, q, pos, limit)
			if err != nil {
				rd.log.Warn("read queue", "queue", q, "err", err)
				return false
			}
			read = make([]notify.Row, len(rows))
			for i, r := range rows {
				read[i] = notify.Row{ID: r.ID, Tag: r.Tag, CreatedAt: r.CreatedAt, Key: r.Key}
			}
		}
		for _, cs := range css {
			rd.fanOutWith(cs, read, headers, started)
		}
		if len(read) == limit {
			more = true
		}
	}
	return more
}

// anyFiltered reports whether one of css has an attribute filter on its topic.
func (rd *queueReader) anyFiltered(css []*cursorState) bool {
	for _, cs := range css {
		if rd.subscription(cs).HasFilter() {
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
func (rd *queueReader) room(cs *cursorState) int {
	if cs.group.g.Status != models.GroupRunning || cs.beyond || cs.takeover != nil {
		return 0
	}
	return max(rd.cfg.MaxSpan-cs.span(), 0)
}

// applyRows hands the rows a flush committed to one queue (a notification's, in id
// order) to each cursor of the queue whose read position is just before them, so
// those cursors need no queue read; any other cursor (behind, out of room, or the
// rows have gaps another writer may fill) has the queue read instead. A cursor
// already past the rows (a scan got there first, or this is the Redis copy of a
// local notification) ignores them.
func (rd *queueReader) applyRows(ev notify.Event) {
	rows := ev.Rows
	first, last := rows[0].ID, rows[len(rows)-1].ID
	contiguous := last-first+1 == int64(len(rows))
	var at time.Time
	for _, cs := range rd.byQueue[ev.Queue] {
		if cs.readPos >= last {
			continue
		}
		if !contiguous || cs.readPos+1 != first || rd.room(cs) < len(rows) || !rd.decidable(cs, rows) {
			// (A paused cursor marks the queue too; the read skips it. A cursor
			// filtering on attributes reads the queue for the headers a notification
			// over Redis does not carry.)
			rd.dirty[ev.Queue] = true
			continue
		}
		if at.IsZero() {
			at = rd.now()
		}
		rd.fanOut(cs, rows, at)
	}
}

// decidable reports whether cs's filters can be decided on rows as a notification
// carries them: always without an attribute filter, else only when every row
// carries its message (the in-process path, and notifications over Redis that
// carry bodies; others carry tags but no headers).
func (rd *queueReader) decidable(cs *cursorState, rows []notify.Row) bool {
	if !rd.subscription(cs).HasFilter() {
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
func (rd *queueReader) fanOut(cs *cursorState, rows []notify.Row, at time.Time) {
	rd.fanOutWith(cs, rows, nil, at)
}

// fanOutWith is fanOut with the rows' headers by id (nil when not read) for an
// attribute filter. A row whose headers are unknown is delivered: a filter miss
// costs a POST, never a message.
func (rd *queueReader) fanOutWith(cs *cursorState, rows []notify.Row, headers map[int64]map[string]string, at time.Time) {
	sub := rd.subscription(cs)
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

// subscription returns cs's subscription to its queue's topic (zero when none).
func (rd *queueReader) subscription(cs *cursorState) models.Subscription {
	topics := rd.queueTopic(cs.queueID)
	for _, s := range cs.group.g.Subscriptions {
		if s.TopicID == topics {
			return s
		}
	}
	return models.Subscription{}
}

// reReadHoles re-reads every open hole of the queue's cursors in one statement,
// dispatches rows that appeared and closes holes that a read started at least
// gap_timeout after they were first seen, and after the queue's node was last found
// away (reached), still misses (InnoDB commits ids out of order).
func (rd *queueReader) reReadHoles(ctx context.Context, q int64) {
	var ids []int64
	seen := map[int64]bool{}
	for _, cs := range rd.byQueue[q] {
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
	started := rd.now().UnixMilli()
	found, headers, err := rd.rowsByIDs(ctx, q, ids)
	if err != nil {
		delete(rd.reached, q)
		rd.log.Warn("re-read holes", "queue", q, "err", err)
		return
	}
	since, ok := rd.reached[q]
	if !ok {
		since = started
		rd.reached[q] = since
	}
	gap := rd.cfg.GapTimeout.Milliseconds()
	for _, cs := range rd.byQueue[q] {
		sub := rd.subscription(cs)
		for id, first := range cs.holes {
			if r, ok := found[id]; ok {
				if match, _ := passes(sub, notify.Row{ID: r.ID, Tag: r.Tag}, headers); match {
					cs.holeFound(id, r.CreatedAt, r.Key)
				} else {
					cs.markDone(id)
				}
				continue
			}
			if started-max(first, since) >= gap {
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
func (rd *queueReader) poll(ctx context.Context) {
	if len(rd.byQueue) == 0 {
		return
	}
	qs := make([]int64, 0, len(rd.byQueue))
	for q := range rd.byQueue {
		qs = append(qs, q)
	}
	maxIDs, err := rd.st.QueueMaxIDs(ctx, qs)
	if err != nil {
		// A db node that does not answer leaves its queues out; the others still poll.
		rd.log.Warn("fallback poll", "err", err)
		if len(maxIDs) == 0 {
			return
		}
	}
	rd.maxIDs = maxIDs
	for q := range rd.byQueue {
		if _, ok := maxIDs[q]; !ok {
			delete(rd.reached, q) // its node did not answer
		}
	}
	for q, m := range maxIDs {
		holes := false
		for _, cs := range rd.byQueue[q] {
			if cs.readPos < m {
				rd.dirty[q] = true
			}
			rd.checkBeyond(ctx, cs, q, m)
			holes = holes || len(cs.holes) > 0 || len(cs.closed) > 0
		}
		if holes {
			rd.reReadHoles(ctx, q)
			rd.checkClosedHoles(ctx, q)
		}
	}
	rd.lastPoll = rd.now()
}

// beyondConfirm is how long a cursor must stay past its table's end, over at least
// two polls, before its queue is made read-only: a read that lagged heals within
// it, while a restored node or a lagging replica taking writes would hand out
// offsets already delivered (never sent then) if it kept taking publishes.
const beyondConfirm = 2 * time.Second

// checkBeyond follows cs's commit against MAX(id) m of its queue q, read by a poll
// that reached the queue's node. Past it, cs is not served (room) until the table
// catches up; back within it, cs is served again. Only a cursor past it on two
// polls at least beyondConfirm apart makes the queue read-only, so no new offset
// can collide with one already delivered, and alerts
// (herald_cursors_beyond_max_total); one sighting never does.
func (rd *queueReader) checkBeyond(ctx context.Context, cs *cursorState, q, m int64) {
	now := rd.now()
	switch {
	case cs.committed <= m:
		if cs.beyond {
			rd.log.Info("cursor back within its queue's max offset; serving it again", "cursor", cs.id, "queue", q, "offset", cs.committed, "max", m)
			rd.wakeBy(now)
		}
		cs.beyond, cs.beyondSince, cs.beyondFlagged = false, time.Time{}, false
	case !cs.beyond:
		cs.beyond, cs.beyondSince = true, now
		rd.log.Warn("cursor beyond its queue's max offset; not serving it until the table catches up", "cursor", cs.id, "queue", q, "offset", cs.committed, "max", m)
	case !cs.beyondFlagged && now.Sub(cs.beyondSince) >= beyondConfirm:
		cs.beyondFlagged = true
		metrics.CursorsBeyondMax.Inc()
		rd.log.Error("cursor beyond its queue's max offset; making the queue read-only (a restore or a lagging replica?)", "cursor", cs.id, "queue", q, "offset", cs.committed, "max", m, "since", cs.beyondSince)
		if err := rd.st.QueueSetState(ctx, q, models.QueueReadOnly); err != nil {
			rd.log.Warn("make queue read-only", "queue", q, "err", err)
		}
	}
}

// checkClosedHoles re-reads, once, holes closed as rollbacks whose second look is
// due. A row found then committed after gap_timeout: it is delivered through the
// retry topic and counted in herald_late_rows_total, which should alert.
func (rd *queueReader) checkClosedHoles(ctx context.Context, q int64) {
	nowMS := rd.now().UnixMilli()
	due := map[*cursorState][]int64{}
	var ids []int64
	for _, cs := range rd.byQueue[q] {
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
	found, headers, err := rd.rowsByIDs(ctx, q, ids)
	if err != nil || len(found) == 0 {
		return
	}
	for cs, list := range due {
		sub := rd.subscription(cs)
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
		rd.log.Error("rows committed after gap_timeout; delivering them through the retry topic", "queue", q, "group", cs.group.g.Name, "count", len(late))
		if err := rd.st.RetryAddLate(ctx, cs.groupID, q, late); err != nil {
			rd.log.Warn("queue late rows for retry", "err", err)
			continue
		}
		cs.group.health.retryDueBy(rd.now())
	}
}

// rowsByIDs re-reads the listed ids of queue q by id, with their headers (by id)
// only when a cursor of q filters on attributes.
func (rd *queueReader) rowsByIDs(ctx context.Context, q int64, ids []int64) (map[int64]store.RowMeta, map[int64]map[string]string, error) {
	found := make(map[int64]store.RowMeta, len(ids))
	if !rd.anyFiltered(rd.byQueue[q]) {
		rows, err := rd.st.QueueRowsByIDs(ctx, q, ids)
		for _, r := range rows {
			found[r.ID] = r
		}
		return found, nil, err
	}
	rows, err := rd.st.QueueRowsByIDsAttributes(ctx, q, ids)
	headers := make(map[int64]map[string]string, len(rows))
	for _, r := range rows {
		found[r.ID] = r.RowMeta
		headers[r.ID] = r.Headers
	}
	return found, headers, err
}

// queueTopic returns the topic id of queue q, reloading the map on a miss.
func (rd *queueReader) queueTopic(q int64) int64 {
	if t, ok := rd.queueTopics[q]; ok {
		return t
	}
	m, err := rd.st.QueueTopicIDs(context.Background())
	if err != nil {
		rd.log.Warn("read queue topics", "err", err)
		return 0
	}
	rd.queueTopics = m
	return m[q]
}
