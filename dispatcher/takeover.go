package dispatcher

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
)

// Takeover tuning.
const (
	// takeoverGrace is how long a cursor taken from another owner waits before it is
	// read: the fence raised by the claim makes the previous owner's running jobs
	// flush what they delivered to its report stream at once; this covers that flush.
	takeoverGrace = 250 * time.Millisecond
	// takeoverReplayMax caps the entries read from a previous owner's report stream.
	takeoverReplayMax = 10_000
	// takeoverListTTL is how long a previous owner's report stream is kept once read.
	takeoverListTTL = time.Hour
)

// takeover marks a cursor claimed from another dispatcher: it is neither read nor
// cut until at and until the previous owner's jobs still running on workers have
// ended (ghosts), when the reports the previous owner left for version (its last
// one) are applied, so what it delivered but never committed is not sent again.
type takeover struct {
	from    string
	version int64
	at      time.Time
	ghosts  ghosts // from's jobs still running (ghosts.go)
}

// takeovers are the cursors held until their previous owner's reports are applied
// (holdForTakeover): it reads the previous owners' report streams and hands what
// they say to the cursors and their orderers.
type takeovers struct {
	held    map[*cursorState]struct{}
	streams *bus.ReportStreams
	keys    delivery.Keys
	orders  *orders
	reader  *queueReader // marks a released cursor's queue dirty, so it is read at once
	log     *slog.Logger
	now     Clock
	wakeBy  func(time.Time)
	// jobs finds a previous owner's jobs still running (waitGhosts); self is this
	// dispatcher's id, whose own jobs are counted already.
	jobs bus.Jobs
	self string
	// forced says finish applies every held cursor now (finishHeld), ghosts or not.
	forced bool
}

// hold holds cs for hold (takeoverGrace, or orderedHold for an ordered group);
// from "" holds without replaying reports (a release with a POST in flight).
func (t *takeovers) hold(cs *cursorState, from string, version int64, hold time.Duration) {
	if cs.takeover != nil {
		settleGhosts(cs, nil) // held again: a new takeover counts its own
	}
	cs.takeover = &takeover{from: from, version: version, at: t.now().Add(hold)}
	t.held[cs] = struct{}{}
	t.wakeBy(cs.takeover.at)
}

// forget stops holding cs (a dropped cursor), giving back its ghosts' credits.
func (t *takeovers) forget(cs *cursorState) {
	if _, ok := t.held[cs]; ok && cs.takeover != nil {
		settleGhosts(cs, nil)
	}
	delete(t.held, cs)
}

// finish applies, for every held cursor whose grace has passed, the reports in its
// previous owner's Redis stream: delivered, retry-written and dead-lettered offsets
// of the previous version are done (final and idempotent). The previous owner
// trimmed only entries its commits covered, so the stream holds every report whose
// outcome the cursor's committed state lacks, whether or not that owner had read
// it. The stream is read whole (XRANGE), not removed (the dead owner's groups may go
// to several new owners), and expires after takeoverListTTL. A Redis error costs
// duplicates only. A cursor of a group ordered by key also takes the keys' floors
// from the ordered jobs' reports (keyfloor.go), so a key's message is not sent again
// after a later one of the key even where its report is missing.
func (t *takeovers) finish(ctx context.Context) {
	if len(t.held) == 0 {
		return
	}
	now := t.now()
	due := map[string][]*cursorState{}
	for cs := range t.held {
		if now.Before(cs.takeover.at) {
			t.wakeBy(cs.takeover.at)
			continue
		}
		if !t.forced && t.waitGhosts(ctx, cs) {
			continue
		}
		due[cs.takeover.from] = append(due[cs.takeover.from], cs)
	}
	for from, css := range due {
		var done map[*cursorState][]int64
		if from != "" {
			done = t.replay(ctx, from, css)
		}
		for _, cs := range css {
			if from != "" {
				t.orders.of(cs.group.g).takenOver(ctx, cs, done[cs])
			}
			settleGhosts(cs, nil) // a forced finish may leave some
			cs.takeover = nil
			delete(t.held, cs)
			t.reader.dirty[cs.queueID] = true
		}
	}
}

// replay applies the reports of from's stream to css and returns, per cursor, the
// offsets of ordered jobs they name done (orderedDone).
func (t *takeovers) replay(ctx context.Context, from string, css []*cursorState) map[*cursorState][]int64 {
	entries, err := t.streams.Replay(ctx, t.keys.Reports(from), takeoverReplayMax, takeoverListTTL)
	if err != nil {
		t.log.Warn("read the previous owner's reports; what it delivered since its last commit is sent again", "owner", from, "err", err)
	}
	byGQ := make(map[[2]int64]*cursorState, len(css))
	for _, cs := range css {
		byGQ[[2]int64{cs.groupID, cs.queueID}] = cs
	}
	applied := 0
	done := map[*cursorState][]int64{}
	for _, e := range entries {
		for _, r := range e.Reports {
			if r.Retry {
				continue // retry rows are deleted by the worker itself
			}
			cs := byGQ[[2]int64{r.Group, r.Queue}]
			if cs == nil || r.Version != cs.takeover.version {
				continue
			}
			applied += cs.replay(r)
			done[cs] = append(done[cs], orderedDone(r)...)
		}
	}
	t.log.Info("took over cursors; applied the previous owner's reports", "owner", from, "cursors", len(css), "offsets", applied)
	return done
}

// finishHeld applies at once the previous owners' reports for those of css still
// held, before a commit that hands them on (a release, a stop): otherwise the next
// owner, replaying only this dispatcher's stream, would send again what the
// previous owner delivered but never committed. A report the previous owner's POSTs
// add after this is a POST in flight.
func (t *takeovers) finishHeld(ctx context.Context, css []*cursorState) {
	now, any := t.now(), false
	for _, cs := range css {
		if cs.takeover != nil {
			cs.takeover.at, any = now, true
		}
	}
	if any {
		t.forced = true
		t.finish(ctx)
		t.forced = false
	}
}

// replay marks a previous owner's reported outcomes done and returns how many
// offsets it named. The read position follows the commit, and nothing done stays
// pending (a hole re-read may have found one).
func (c *cursorState) replay(r delivery.Report) int {
	n := 0
	done := map[int64]bool{}
	for _, rs := range [][]delivery.Range{r.Delivered, r.RetryWritten, r.DeadLettered} {
		for _, off := range delivery.Expand(rs) {
			c.markDone(off)
			done[off] = true
			n++
		}
	}
	c.pending = slices.DeleteFunc(c.pending, func(p pendingMsg) bool { return done[p.offset] })
	// Reported offsets may lie beyond this owner's read position, where advance does
	// not go: the commit moves over those that follow it without a gap, and reads
	// resume after it (the rest stay in done, and reads skip them).
	for {
		next := c.committed + 1
		if _, ok := c.done[next]; !ok {
			break
		}
		delete(c.done, next)
		c.committed, c.dirty = next, true
	}
	c.readPos = max(c.readPos, c.committed)
	return n
}
