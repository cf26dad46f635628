package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// loneGap is the pause between lone messages in (g): long enough that every asynq
// processor has gone back to its idle sleep.
const loneGap = 300 * time.Millisecond

// scenarioLone is (g): one group (batch 1) on an idle Herald; 20 single messages
// loneGap apart, each published only after the previous one arrived. Measured from
// just before the publish request to the receipt.
func (b *bench) scenarioLone(ctx context.Context) *result {
	r := &result{key: "g", title: fmt.Sprintf("lone messages on an idle system (20, %s apart)", loneGap)}
	lt, err := b.trickleGroup(ctx, r, "g")
	if err != nil {
		return r.fail(err)
	}
	time.Sleep(2 * time.Second) // let the warm-up's job, report and commit finish
	var lone []time.Duration
	for i := range 20 {
		time.Sleep(loneGap)
		id, err := lt.publishOne(ctx, i)
		if err != nil {
			r.note("lone publish %d: %v", i, err)
			continue
		}
		lt.waitFor(ctx, id, 3*time.Second)
		if d, ok := lt.sk.lookup(id); ok {
			lone = append(lone, d.at.Sub(lt.sentAt(id)))
		}
	}
	slices.Sort(lone)
	if len(lone) == 0 {
		r.check("lone message latency, median", "no lone message received", "≤ 3 ms", false)
	} else {
		med := pct(lone, 0.5)
		r.check("lone message latency, median", ms(med), "≤ 3 ms", med <= 3*time.Millisecond && len(lone) == 20)
		r.info("lone message latency, min / p90 / max", fmt.Sprintf("%s / %s / %s (%d of 20 received)", ms(lone[0]), ms(pct(lone, 0.9)), ms(lone[len(lone)-1]), len(lone)))
	}
	if err := b.c.pauseGroup(ctx, "bench-g"); err != nil {
		r.note("pause bench-g: %v", err)
	}
	return r
}

// scenarioTrickle is (h): single-message publishes paced at -trickle-rate (default
// 500/s) for -trickle-duration to one group (batch 1): Redis commands and MySQL
// statements per message, CPU per message and latency. Goals per message: ≤ 14 Redis
// commands, ≤ 1.3 MySQL statements, ≤ 0.4 CPU-ms of Herald + MariaDB + Redis.
func (b *bench) scenarioTrickle(ctx context.Context) *result {
	rate := b.opts.trickleRate
	r := &result{key: "h", title: fmt.Sprintf("paced %d msg/s single-message publishes to one group, batch 1 (%s)", rate, b.opts.trickleDur)}
	lt, err := b.trickleGroup(ctx, r, "h")
	if err != nil {
		return r.fail(err)
	}
	n := rate * int(b.opts.trickleDur/time.Second)
	end := b.startWindow(ctx)
	ps := lt.paced(ctx, n, time.Second/time.Duration(rate))
	wctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	lt.sk.waitDistinct(wctx, len(ps.ids)+1)
	cancel()
	use := end()
	lats, missing := lt.latencies(ps.ids)
	r.info("messages", fmt.Sprintf("%d published, %d errors, %d not received", len(ps.ids), ps.errs, missing))
	if len(lats) > 0 {
		r.info("latency p50 / p99", ms(pct(lats, 0.5))+" / "+ms(pct(lats, 0.99)))
	}
	r.publishRows(ps, lt.firstErr)
	r.addLiveRows("", use, perMessage(len(ps.ids)), liveGoals{counts: countGoals{redis: 14, mysql: 1.3}, cpuMs: 0.4})
	if err := b.c.pauseGroup(ctx, "bench-"+r.key); err != nil {
		r.note("pause bench-%s: %v", r.key, err)
	}
	return r
}

// trickleGroup creates topic bench.<key> (4 queues) and group bench-<key> (batch 1,
// consume_from latest) and waits for a warm-up message.
func (b *bench) trickleGroup(ctx context.Context, r *result, key string) (*latencyRun, error) {
	topic, group := "bench."+key, "bench-"+key
	if _, err := b.c.createTopic(ctx, topic, 4); err != nil {
		return nil, err
	}
	sk, url := b.rcv.newSink(key)
	secret, err := b.c.createGroup(ctx, groupSpec{name: group, topic: topic, endpoint: url, consumeFrom: "latest", batchSize: 1, maxInFlight: 64})
	if err != nil {
		return nil, err
	}
	if err := sk.setSecret(secret); err != nil {
		r.note("signature check off: %v", err)
	}
	lt := newLatencyRun(b, sk, topic)
	if _, err := lt.publishOne(ctx, -1); err != nil {
		return nil, fmt.Errorf("warm-up publish: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	defer cancel()
	if !sk.waitDistinct(wctx, 1) {
		return nil, fmt.Errorf("warm-up message not received within %s", b.opts.phaseTimeout)
	}
	return lt, nil
}
