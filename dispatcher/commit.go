package dispatcher

import (
	"context"
	"slices"

	"github.com/heraldhq/herald/models/store"
)

// commit writes every changed cursor in one transaction, fenced by version and owner.
// A cursor whose fence fails was reset or taken over: it is dropped and its group
// reloaded at the next step, which claims it again from its new committed state if
// it is still this dispatcher's.
func (d *Dispatcher) commit(ctx context.Context) {
	d.reported, d.lastCommit = false, d.now()
	defer d.trimReports(ctx)
	d.orders.save(ctx)
	var commits []store.CursorCommit
	for _, cs := range d.cursors {
		if !cs.dirty {
			continue
		}
		off, holes := cs.commitPoint()
		commits = append(commits, store.CursorCommit{ID: cs.id, Version: cs.version, Offset: off, Holes: holes})
	}
	if len(commits) == 0 {
		return
	}
	lost, err := d.sched.CursorsCommit(ctx, d.id, commits)
	if err != nil {
		d.log.Warn("commit cursors", "err", err)
		return
	}
	for _, c := range commits {
		cs := d.cursors[c.ID]
		if cs == nil || slices.Contains(lost, c.ID) {
			continue
		}
		cs.durable = durable{version: c.Version, offset: c.Offset, holes: c.Holes}
		if cs.committed == c.Offset {
			cs.dirty = false
		}
	}
	if d.TestSignals.CommitApplied.On() {
		offsets := make(map[int64]int64, len(commits))
		for _, c := range commits {
			offsets[c.ID] = c.Offset
		}
		d.TestSignals.CommitApplied.Signal(Commit{Dispatcher: d.id, Offsets: offsets, Lost: lost})
	}
	for _, id := range lost {
		if cs := d.cursors[id]; cs != nil {
			d.log.Info("cursor fence lost (reset or takeover); reloading", "cursor", id)
			d.dropCursor(cs)
			d.reload[cs.groupID] = true
		}
	}
}

// commitReported commits soon after reports moved cursors, at most once per
// ReportCommitDelay, so the report stream is trimmed soon after its entries are
// applied (a crash costs no more duplicates for the wait: the entries stay in the
// stream until a commit covers them, and a successor replays them).
func (d *Dispatcher) commitReported(ctx context.Context) {
	if !d.reported {
		return
	}
	if due := d.lastCommit.Add(d.cfg.ReportCommitDelay); d.now().Before(due) {
		d.wakeBy(due)
		return
	}
	d.commit(ctx)
}

// trimReports removes from this dispatcher's report stream the entries its commits
// now cover (reportLog): one XTRIM MINID when something new is covered, none
// otherwise. A failed trim is retried by the next one, whose MINID is higher.
func (d *Dispatcher) trimReports(ctx context.Context) {
	minID, ok := d.reportLog.trim(func(gq [2]int64) (durable, bool) {
		cs := d.byGQ[gq]
		if cs == nil {
			return durable{}, false
		}
		return cs.durable, true
	}, d.now())
	if !ok {
		return
	}
	d.streams.Trim(ctx, d.keys.Reports(d.id), minID)
}
