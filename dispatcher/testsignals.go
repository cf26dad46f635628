package dispatcher

import "github.com/heraldhq/herald/internal/testsignal"

// TestSignals are the points of the dispatcher's loop that tests wait on instead of
// sleeping (testsignal). They are off, costing one nil check each, unless Init is
// called before Run.
type TestSignals struct {
	// OwnershipSettled is emitted after the ownership work of a step (the first
	// rebalance, a sweep, a changed live set, group reloads) once nothing of it is
	// left: no retry scheduled and no claimed cursor waiting for its previous
	// owner's reports.
	OwnershipSettled testsignal.Signal[Ownership]
	// CommitApplied is emitted after a commit wrote cursors.
	CommitApplied testsignal.Signal[Commit]
}

// Init turns every signal on.
func (ts *TestSignals) Init() {
	ts.OwnershipSettled.Init()
	ts.CommitApplied.Init()
}

// Ownership is what a dispatcher holds when its ownership settled: counts of owned
// groups and held cursors.
type Ownership struct {
	Dispatcher      string
	Groups, Cursors int
}

// Commit is one applied commit: Offsets maps each written cursor id to the offset it
// committed; Lost lists the cursors whose fence failed (dropped, reloaded).
type Commit struct {
	Dispatcher string
	Offsets    map[int64]int64
	Lost       []int64
}

// settleSignal emits OwnershipSettled when ownership work ran since the last one and
// none of it is left.
func (d *Dispatcher) settleSignal() {
	if !d.unsettled || !d.retry.at.IsZero() || len(d.takeovers.held) > 0 {
		return
	}
	d.unsettled = false
	d.TestSignals.OwnershipSettled.Signal(Ownership{Dispatcher: d.id, Groups: len(d.groups), Cursors: len(d.cursors)})
}
