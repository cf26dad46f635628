package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/bench/internal/procstat"
)

// fanoutGoalMs is scenario (o)'s goal: CPU-ms of Herald + MariaDB + Redis per delivery.
const fanoutGoalMs = 0.15

// scenarioFanout is (o), fan-out: -fanout-groups groups (batch 1, max_in_flight 64,
// consume_from latest) on one 4-queue topic, each with its own receiver sink
// (/hook/o-NN), and single-message publishes paced at -fanout-rate for
// -fanout-duration, so groups × rate deliveries per second. Every group must receive
// every message once with its body intact; goal ≤ 0.15 CPU-ms per delivery.
func (b *bench) scenarioFanout(ctx context.Context) *result {
	groups, rate, dur := b.opts.fanoutGroups, b.opts.fanoutRate, b.opts.fanoutDur
	r := &result{key: "o", title: fmt.Sprintf("fan-out: %d groups (batch 1) on one 4-queue topic, paced %d msg/s single-message publishes (%s)", groups, rate, dur)}
	topic := "bench.o"
	if _, err := b.c.createTopic(ctx, topic, 4); err != nil {
		return r.fail(err)
	}
	names := make([]string, groups)
	sinks := make([]*sink, groups)
	for i := range groups {
		names[i] = fmt.Sprintf("bench-o-%02d", i)
		sk, url := b.rcv.newSink(fmt.Sprintf("o-%02d", i))
		secret, err := b.c.createGroup(ctx, groupSpec{name: names[i], topic: topic, endpoint: url, consumeFrom: "latest", batchSize: 1, maxInFlight: 64})
		if err != nil {
			return r.fail(fmt.Errorf("create %s: %w", names[i], err))
		}
		if err := sk.setSecret(secret); err != nil {
			r.note("signature check off for %s: %v", names[i], err)
		}
		sinks[i] = sk
	}
	defer func() {
		for _, g := range names {
			if err := b.c.pauseGroup(ctx, g); err != nil {
				r.note("pause %s: %v", g, err)
			}
		}
	}()
	lt := newLatencyRun(b, sinks[0], topic)
	if _, err := lt.publishOne(ctx, -1); err != nil {
		return r.fail(fmt.Errorf("warm-up publish: %w", err))
	}
	if !b.waitAll(ctx, sinks, 1) {
		return r.fail(fmt.Errorf("warm-up message not received by all %d groups within %s", groups, b.opts.phaseTimeout))
	}

	n := rate * int(dur/time.Second)
	resetOK := procstat.ResetPeakRSS(b.procs.herald) == nil
	conns0 := b.rcv.conns.Load()
	end := b.startWindow(ctx)
	ps := lt.paced(ctx, n, time.Second/time.Duration(rate))
	complete := b.waitAll(ctx, sinks, len(ps.ids)+1) // and the warm-up message
	use := end()

	pub := lt.published()
	var (
		lats                   []time.Duration
		missing, differ, dups  int
		unknown, sigOK, sigBad int64
		perGroup               []string
	)
	for i, sk := range sinks {
		l, _ := lt.latenciesAt(sk, ps.ids)
		lats = append(lats, l...)
		bc, st := compareBodies(sk, pub.want), sk.stats()
		missing, differ, unknown, dups = missing+bc.missing, differ+bc.mismatched, unknown+bc.unexpected, dups+int(st.dups)
		sigOK, sigBad = sigOK+st.sigOK, sigBad+st.sigBad
		perGroup = append(perGroup, fmt.Sprintf("%s %d/%d", names[i], bc.missing, st.dups))
	}
	slices.Sort(lats)
	want := groups * len(ps.ids)
	b.logf("o: %d messages published, %d of %d deliveries received", len(ps.ids), len(lats), want)
	r.info("messages", fmt.Sprintf("%d published, %d failed requests; %d deliveries expected (%d groups × %d)", len(ps.ids), ps.errs, want, groups, len(ps.ids)))
	r.check("every group received every message (SHA-256 by webhook-id)",
		fmt.Sprintf("%d of %d deliveries; %d missing, %d differ, %d unknown ids, %d duplicates", len(lats), want, missing, differ, unknown, dups),
		"0 missing / differ / unknown", missing == 0 && differ == 0 && unknown == 0)
	r.info("missing / duplicates per group", strings.Join(perGroup, ", "))
	if !complete {
		r.note("not every delivery arrived within %s of the last publish", b.opts.phaseTimeout)
	}
	r.latencyRows("latency per delivery", lats, 0, 0, 0)
	r.publishRows(ps, lt.firstErr)
	r.info("webhook-signature (1 in 200 checked per group)", fmt.Sprintf("%d of %d sampled signatures valid", sigOK, sigOK+sigBad))
	r.info("TCP connections Herald opened to the receiver", fmt.Sprint(b.rcv.conns.Load()-conns0))
	r.addLiveRows("", use, per{n: len(lats), unit: "delivery"}, liveGoals{cpuMs: fanoutGoalMs})
	r.addPerUnitCounts("", use.counts, perMessage(len(ps.ids)), countGoals{})
	r.peakRSSRow(b.procs.herald, resetOK)
	return r
}

// waitAll waits, for at most -phase-timeout in all, until every sink has n distinct ids.
func (b *bench) waitAll(ctx context.Context, sinks []*sink, n int) bool {
	ctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	defer cancel()
	for _, sk := range sinks {
		if !sk.waitDistinct(ctx, n) {
			return false
		}
	}
	return true
}
