package dispatcher

import (
	"context"
	"time"
)

// retryHorizon is how long a group known to have no retry row goes before it asks
// again on its own; reports, redrives, resends and late rows bring it forward, and
// every sweep refreshes it for all groups in one statement.
const retryHorizon = time.Hour

// pollDue reports whether this poll tick reads MAX(id) of the owned queues: every
// PollInterval while the dispatcher has work (quiet), otherwise once per
// IdlePollInterval. Publishes wake an idle dispatcher by notification; the idle poll
// is only the fallback for a lost one.
func (d *Dispatcher) pollDue() bool {
	return d.now().Sub(d.reader.lastPoll) >= d.cfg.IdlePollInterval || !d.quiet()
}

// quiet reports whether nothing waits on a poll: no job in flight, no cursor held
// for a takeover or due a read, and no cursor with messages to send or holes to
// re-read (open, or closed and due a last look).
func (d *Dispatcher) quiet() bool {
	if len(d.jobs) > 0 || len(d.takeovers.held) > 0 || len(d.reader.dirty) > 0 {
		return false
	}
	for _, gs := range d.groups {
		for _, cs := range gs.cursors {
			if len(cs.pending) > 0 || len(cs.holes) > 0 || len(cs.closed) > 0 {
				return false
			}
		}
	}
	return true
}

// hasWork reports whether the cut has anything to look at in gs: a cursor with
// messages to send, or retry rows that may be due (nextRetry zero means unknown).
// A group without either would cut nothing, so the cut skips it before the
// throttle and breaker checks.
func (gs *groupState) hasWork(now time.Time) bool {
	if !now.Before(gs.health.nextRetry) {
		return true
	}
	for _, cs := range gs.cursors {
		if len(cs.pending) > 0 {
			return true
		}
	}
	return false
}

// refreshRetryDue sets, from one grouped statement, when the earliest retry row of
// each listed group is due: for groups whose due time is unknown (just adopted,
// changed or notified), or for every listed group at the sweep (all). A group with
// no row looks again after retryHorizon. Without it, each such group would claim
// (two statements) to find out, and again every retryHorizon.
func (d *Dispatcher) refreshRetryDue(ctx context.Context, ids []int64, all bool) {
	var ask []int64
	for _, id := range ids {
		if gs := d.groups[id]; gs != nil && (all || gs.health.nextRetry.IsZero()) {
			ask = append(ask, id)
		}
	}
	if len(ask) == 0 {
		return
	}
	due, err := d.st.RetryNextDueByGroups(ctx, ask)
	if err != nil {
		d.log.Warn("read next retry due times; groups claim to find out", "err", err)
		return
	}
	horizon := d.now().Add(retryHorizon)
	for _, id := range ask {
		gs := d.groups[id]
		t, ok := due[id]
		switch {
		case ok && (gs.health.nextRetry.IsZero() || t.Before(gs.health.nextRetry)):
			gs.health.nextRetry = t
		case !ok && (gs.health.nextRetry.IsZero() || gs.health.nextRetry.Before(horizon)):
			gs.health.nextRetry = horizon
		}
	}
}
