package main

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/bench/internal/procstat"
)

// saturationGoal is scenario (s)'s goal: delivered messages per second, end to end.
const saturationGoal = 6000

// scenarioSaturation is (s), live saturation: -saturation-publishers publishers each
// send single-message requests of 1 KiB JSON back to back, for -saturation-duration
// or until -saturation-max messages, to a 4-queue topic with one group (batch 1,
// max_in_flight 64, consume_from latest) that delivers while they publish. The
// delivered rate is all messages / (last receipt − first publish); goal ≥ 6,000
// msg/s with every message received once with its body (SHA-256) intact.
func (b *bench) scenarioSaturation(ctx context.Context) *result {
	workers, dur := b.opts.saturationPublishers, b.opts.saturationDur
	r := &result{key: "s", title: fmt.Sprintf("live saturation: %d unpaced publishers of single 1 KiB messages, one group, batch 1 (%s or %d messages)",
		workers, dur, b.opts.saturationMax)}
	lt, err := b.trickleGroup(ctx, r, "s")
	if err != nil {
		return r.fail(err)
	}
	sk := lt.sk
	resetOK := procstat.ResetPeakRSS(b.procs.herald) == nil
	conns0 := b.rcv.conns.Load()
	end := b.startWindow(ctx)
	ps := lt.unpaced(ctx, workers, dur, b.opts.saturationMax, 0)
	pubWall := ps.last.Sub(ps.first)
	b.logf("s: published %d messages in %s", len(ps.ids), pubWall.Round(time.Millisecond))
	wctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	complete := sk.waitDistinct(wctx, len(ps.ids)+1) // and the warm-up message
	cancel()
	use := end()

	lats, missing := lt.latencies(ps.ids)
	var lastReceipt time.Time
	inWindow := 0
	for _, id := range ps.ids {
		if d, ok := sk.lookup(id); ok {
			if d.at.After(lastReceipt) {
				lastReceipt = d.at
			}
			if !d.at.After(ps.last) {
				inWindow++
			}
		}
	}
	b.logf("s: %d of %d received", len(lats), len(ps.ids))
	r.info("messages", fmt.Sprintf("%d published (%.0f msg/s accepted over %s), %d failed requests, %d not received",
		len(ps.ids), float64(len(ps.ids))/pubWall.Seconds(), pubWall.Round(time.Millisecond), ps.errs, missing))
	goal := fmt.Sprintf("≥ %d msg/s, 0 missing", saturationGoal)
	if len(lats) > 0 {
		span := lastReceipt.Sub(ps.first)
		rate := float64(len(lats)) / span.Seconds()
		r.check("delivered throughput: received / (last receipt − first publish)",
			fmt.Sprintf("%.0f msg/s (%d in %s; %d missing)", rate, len(lats), span.Round(time.Millisecond), missing), goal,
			rate >= saturationGoal && missing == 0)
	} else {
		r.check("delivered throughput: received / (last receipt − first publish)", "nothing received", goal, false)
	}
	r.info("received during the publish window", fmt.Sprintf("%d (%.0f msg/s over %s); the rest after publishing stopped",
		inWindow, float64(inWindow)/pubWall.Seconds(), pubWall.Round(time.Millisecond)))
	if !complete {
		r.note("%d of %d messages not received within %s of the last publish", missing, len(ps.ids), b.opts.phaseTimeout)
	}
	if ps.errs > 0 {
		r.check("failed publish requests", fmt.Sprint(ps.errs), "0", false)
	}
	r.timelineRow("receipt timeline", sk, ps.first, "first publish")
	r.latencyRows("publish → receipt", lats, missing, 0, 0)
	r.publishRows(ps, lt.firstErr)
	time.Sleep(300 * time.Millisecond) // let late duplicates show
	b.verify(r, sk, lt.published())
	r.info("TCP connections Herald opened to the receiver", fmt.Sprint(b.rcv.conns.Load()-conns0))
	r.addLiveRows("", use, perMessage(len(ps.ids)), liveGoals{})
	r.peakRSSRow(b.procs.herald, resetOK)
	if err := b.c.pauseGroup(ctx, "bench-s"); err != nil {
		r.note("pause bench-s: %v", err)
	}
	return r
}
