package dispatcher

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

// unheldReportKeep is how long an entry of the report stream naming a cursor this
// dispatcher does not hold (at the version the entry names) is kept: a successor
// that took the cursor over replays this stream at the end of its hold (250 ms, or
// 250 ms + timeout_ms ≤ 30.25 s for an ordered group), which a minute covers.
const unheldReportKeep = time.Minute

// durable is what a cursor's last successful commit says (or its claim, before the
// first): every offset at or below offset is done except those in holes. A successor
// starts from exactly this, so a report naming only offsets it covers tells a
// successor nothing.
type durable struct {
	version, offset int64
	holes           []models.Hole
}

// covers reports whether every offset of r is done by this commit: r ends at or
// below its offset and meets none of its holes.
func (c durable) covers(r delivery.Range) bool {
	if r[1] > c.offset {
		return false
	}
	for _, h := range c.holes {
		if r[0] <= h.To && h.From <= r[1] {
			return false
		}
	}
	return true
}

// reportClaim is what one report of a first-delivery job says is done for one
// cursor (group, queue) at one version: delivered, retry-written and dead-lettered
// offsets, the outcomes a successor's replay marks done (takeover.go).
type reportClaim struct {
	gq      [2]int64
	version int64
	done    []delivery.Range
}

// loggedEntry is one entry of this dispatcher's report stream, read and applied,
// not yet trimmed.
type loggedEntry struct {
	id     string
	claims []reportClaim
	// unheldSince is when a check first found a claim for a cursor not held at its
	// version; zero until then.
	unheldSince time.Time
}

// reportLog is the part of this dispatcher's report stream (delivery.Keys.Reports)
// it has read and not yet trimmed, in stream order. Workers add entries; the
// dispatcher applies them at once but removes them only once its commits cover
// them, so a successor that takes its cursors over after a crash replays every
// report whose outcome the database does not yet hold: duplicates after a kill are
// the POSTs in flight, not the reports taken and not yet committed.
//
// An entry is covered when each of its claims is:
//   - of an older version than the cursor held here (reset or taken over since: a
//     successor replays only the version it took over, and no commit of the older
//     one can land any more);
//   - of the held version, with every offset it names done by the last successful
//     commit (durable.covers: at or below the committed offset, not a listed hole);
//   - of a cursor not held here at that version (released, lost, never claimed), once
//     unheldReportKeep has passed since a check first found it so.
//
// Reports of retry jobs and reports naming no done offset claim nothing. The
// covered prefix is trimmed (XTRIM MINID); an uncovered entry holds back every later
// one, covered or not, which only keeps them a little longer.
type reportLog struct {
	entries []loggedEntry
}

// add records an entry read from the stream, after its reports were applied.
func (l *reportLog) add(id string, reports []delivery.Report) {
	e := loggedEntry{id: id}
	for _, r := range reports {
		if r.Retry {
			continue // retry rows are deleted by the worker itself; a replay skips them
		}
		var done []delivery.Range
		for _, rs := range [][]delivery.Range{r.Delivered, r.RetryWritten, r.DeadLettered} {
			done = append(done, rs...)
		}
		if len(done) > 0 {
			e.claims = append(e.claims, reportClaim{gq: [2]int64{r.Group, r.Queue}, version: r.Version, done: done})
		}
	}
	l.entries = append(l.entries, e)
}

// trim drops the covered prefix of the entries and returns the MINID that removes
// it from the stream (the last covered entry's id plus one), or ok false when
// nothing new is covered. held returns the last commit of the cursor (group,
// queue) this dispatcher holds, ok false when it holds none.
func (l *reportLog) trim(held func(gq [2]int64) (durable, bool), now time.Time) (minID string, ok bool) {
	n := 0
	for i := range l.entries {
		if !l.entries[i].covered(held, now) {
			break
		}
		n++
	}
	if n == 0 {
		return "", false
	}
	last := l.entries[n-1].id
	l.entries = append(l.entries[:0], l.entries[n:]...)
	return nextStreamID(last), true
}

// covered applies the rule of reportLog to one entry.
func (e *loggedEntry) covered(held func(gq [2]int64) (durable, bool), now time.Time) bool {
	unheld := false
	for _, c := range e.claims {
		d, ok := held(c.gq)
		switch {
		case ok && c.version < d.version:
			continue
		case ok && c.version == d.version:
			for _, r := range c.done {
				if !d.covers(r) {
					return false
				}
			}
		default:
			unheld = true
		}
	}
	if !unheld {
		return true
	}
	if e.unheldSince.IsZero() {
		e.unheldSince = now
	}
	return now.Sub(e.unheldSince) >= unheldReportKeep
}

// nextStreamID returns the smallest stream id after id ("<ms>-<seq>").
func nextStreamID(id string) string {
	ms, seq, ok := strings.Cut(id, "-")
	if !ok {
		return id
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return id
	}
	return fmt.Sprintf("%s-%d", ms, n+1)
}
