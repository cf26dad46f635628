package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// liveSettle is how long a live phase keeps counting after its last receipt, so the
// last delivery reports and cursor commits fall inside the window.
const liveSettle = 1500 * time.Millisecond

// liveUse is what Herald, MariaDB and Redis did during one live phase: exact command
// counts and CPU.
type liveUse struct {
	counts countUse
	cpu    cpuUse
}

// startWindow takes the first counter and CPU readings of a live phase; the returned
// end waits liveSettle, takes the second ones and returns the difference.
func (b *bench) startWindow(ctx context.Context) (end func() liveUse) {
	c0, p0 := b.counts.snap(ctx), b.procs.snap()
	return func() liveUse {
		select {
		case <-ctx.Done():
		case <-time.After(liveSettle):
		}
		return liveUse{counts: c0.until(b.counts.snap(ctx)), cpu: p0.until(b.procs.snap())}
	}
}

// liveGoals are a live scenario's ceilings per unit (message or delivery): Redis
// commands and MySQL statements, and CPUms, the CPU-ms of Herald + MariaDB + Redis
// together. Zero is no goal.
type liveGoals struct {
	counts countGoals
	cpuMs  float64
}

// addLiveRows adds the window's counts per second and per p.unit, and CPU per p.unit.
func (r *result) addLiveRows(phase string, u liveUse, p per, g liveGoals) {
	r.addCountRows(phase, u.counts, countGoals{})
	r.addPerUnitCounts(phase, u.counts, p, g.counts)
	r.addCPURows(phase, u.cpu, p, g.cpuMs)
}

// latencyRows adds p50, p90, p99 and max of sorted latencies; a positive p50Goal or
// p99Goal makes that row checked, passing only when nothing is missing.
func (r *result) latencyRows(label string, sorted []time.Duration, missing int, p50Goal, p99Goal time.Duration) {
	goal := func(d time.Duration) string {
		if d <= 0 {
			return ""
		}
		return "≤ " + trimMs(d)
	}
	row := func(metric string, v, g time.Duration) {
		if g > 0 {
			r.check(metric, ms(v), goal(g), v <= g && missing == 0)
		} else {
			r.info(metric, ms(v))
		}
	}
	if len(sorted) == 0 {
		if p50Goal > 0 {
			r.check(label+" p50", "nothing received", goal(p50Goal), false)
		}
		return
	}
	row(label+" p50", pct(sorted, 0.50), p50Goal)
	r.info(label+" p90", ms(pct(sorted, 0.90)))
	row(label+" p99", pct(sorted, 0.99), p99Goal)
	r.info(label+" max", ms(sorted[len(sorted)-1]))
}

// publishRows adds the publish request time p50 / p99 and the failures.
func (r *result) publishRows(ps publishStats, firstErr error) {
	if len(ps.durs) > 0 {
		d := slices.Clone(ps.durs)
		slices.Sort(d)
		r.info("publish request time p50 / p99", ms(pct(d, 0.5))+" / "+ms(pct(d, 0.99)))
	}
	if ps.errs > 0 {
		r.note("%d publish errors; first: %v", ps.errs, firstErr)
	}
}

// trimMs writes d in milliseconds without trailing zeros: "5 ms", "0.4 ms".
func trimMs(d time.Duration) string {
	return fmt.Sprintf("%g ms", float64(d)/float64(time.Millisecond))
}
