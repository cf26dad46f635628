package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/heraldhq/herald/bench/internal/procstat"
)

// scenarioLatency is (d): publish-to-receipt latency for a group created with
// consume_from latest; single-message publishes paced at latencyRate for
// latencyDur, then 20 lone messages 200 ms apart.
func (b *bench) scenarioLatency(ctx context.Context) *result {
	r := &result{key: "d", title: fmt.Sprintf("latency (%d msg/s single-message publishes for %s, then 20 lone messages)", b.opts.latencyRate, b.opts.latencyDur)}
	topic, group := "bench.d", "bench-d"
	queues, err := b.c.createTopic(ctx, topic, 4)
	if err != nil {
		return r.fail(err)
	}
	sk, url := b.rcv.newSink("d")
	created := time.Now()
	secret, err := b.c.createGroup(ctx, groupSpec{name: group, topic: topic, endpoint: url, consumeFrom: "latest", batchSize: 1, maxInFlight: 64})
	if err != nil {
		return r.fail(err)
	}
	if err := sk.setSecret(secret); err != nil {
		r.note("signature check off: %v", err)
	}
	lt := newLatencyRun(b, sk, topic)

	// Warm-up: the first message published right after the 201 must arrive.
	if _, err := lt.publishOne(ctx, -1); err != nil {
		return r.fail(fmt.Errorf("warm-up publish: %w", err))
	}
	wctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	ok := sk.waitDistinct(wctx, 1)
	cancel()
	if !ok {
		return r.fail(fmt.Errorf("warm-up message published right after group creation not received within %s", b.opts.phaseTimeout))
	}
	r.info("group create to first receipt", sk.stats().last.Sub(created).Round(time.Millisecond).String())

	// Paced phase.
	n := b.opts.latencyRate * int(b.opts.latencyDur/time.Second)
	resetOK := procstat.ResetPeakRSS(b.procs.herald) == nil
	conns0 := b.rcv.conns.Load()
	end := b.startWindow(ctx)
	ps := lt.paced(ctx, n, time.Second/time.Duration(b.opts.latencyRate))
	pctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	complete := sk.waitDistinct(pctx, len(ps.ids)+1)
	cancel()
	use := end()
	lats, missing := lt.latencies(ps.ids)
	b.logf("d: paced %d sent, %d received", len(ps.ids), len(lats))
	r.info("messages (paced)", fmt.Sprintf("%d published, %d errors, %d not received", len(ps.ids), ps.errs, missing))
	if !complete {
		r.note("paced phase: %d of %d messages not received within %s", missing, len(ps.ids), b.opts.phaseTimeout)
	}
	r.latencyRows("latency", lats, missing, 5*time.Millisecond, 25*time.Millisecond)
	r.publishRows(ps, lt.firstErr)
	if after := lt.afterAnswer(ps.ids); len(after) > 0 {
		r.info("publish answer → receipt p50 / p99", ms(pct(after, 0.5))+" / "+ms(pct(after, 0.99))+" (negative: delivered before the answer)")
	}
	r.info("TCP connections Herald opened to the receiver (paced)", fmt.Sprint(b.rcv.conns.Load()-conns0))
	r.addLiveRows(" (paced)", use, perMessage(len(ps.ids)), liveGoals{})
	r.peakRSSRow(b.procs.herald, resetOK)

	// Lone messages.
	var lone, lonePub []time.Duration
	for i := range 20 {
		t0 := time.Now()
		id, err := lt.publishOne(ctx, n+i)
		if err == nil {
			lonePub = append(lonePub, time.Since(t0))
			lt.waitFor(ctx, id, 2*time.Second)
			if d, ok := sk.lookup(id); ok {
				lone = append(lone, d.at.Sub(lt.sentAt(id)))
			}
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(time.Until(t0.Add(200 * time.Millisecond)))
	}
	slices.Sort(lone)
	if len(lone) > 0 {
		med := pct(lone, 0.5)
		r.check("lone message latency, median", fmt.Sprintf("%s (min %s, max %s, %d of 20 received)", ms(med), ms(lone[0]), ms(lone[len(lone)-1]), len(lone)), "≤ 3 ms", med <= 3*time.Millisecond && len(lone) == 20)
	} else {
		r.check("lone message latency, median", "no lone message received", "≤ 3 ms", false)
	}
	if len(lonePub) > 0 {
		slices.Sort(lonePub)
		r.info("lone message publish request time, median", ms(pct(lonePub, 0.5)))
	}
	time.Sleep(300 * time.Millisecond)
	st := sk.stats()
	r.info("duplicate deliveries", fmt.Sprint(st.dups))
	r.info("webhook-signature (1 in 200 checked)", fmt.Sprintf("%d of %d sampled signatures valid", st.sigOK, st.sigOK+st.sigBad))
	if err := b.c.pauseGroup(ctx, group); err != nil {
		r.note("pause %s after the scenario: %v", group, err)
	}
	r.storageRow(ctx, b.db, b.schema, queues)
	return r
}

// pct returns the q-quantile (nearest rank) of sorted durations.
func pct(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
