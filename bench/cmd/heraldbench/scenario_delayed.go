package main

import (
	"context"
	"fmt"
	"time"
)

// delayedLead is how far ahead scenario t's delayed messages are due: room to
// publish them all before their time.
const delayedLead = 5 * time.Second

// scenarioDelayed is (t): -n-delayed 1 KiB messages published with one deliver_at,
// drained from their due time, against the same number published at once and
// drained from the group's creation (scenario a's shape). Goal: the delayed drain
// at least half the immediate one.
func (b *bench) scenarioDelayed(ctx context.Context) *result {
	r := &result{key: "t", title: "delayed messages due at once, against a backlog drain"}
	n := b.opts.delayedN
	r.info("messages (each phase)", fmt.Sprint(n))
	gen := func(i int) outMsg { return outMsg{body: padBody(i, 1024)} }

	// Immediate: a backlog, then a group from earliest.
	if _, err := b.c.createTopic(ctx, "bench.t-now", 4); err != nil {
		return r.fail(err)
	}
	pctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	_, err := publishSeries(pctx, b.c, "bench.t-now", n, 100, 4<<20, 8, gen)
	cancel()
	if err != nil {
		return r.fail(fmt.Errorf("publish the backlog: %w", err))
	}
	now, err := b.delayedPhase(ctx, "t-now", "earliest", time.Now, n)
	if err != nil {
		return r.fail(err)
	}

	// Delayed: a group first, then messages due delayedLead after the publish starts.
	if _, err := b.c.createTopic(ctx, "bench.t-later", 4); err != nil {
		return r.fail(err)
	}
	var due time.Time
	later, err := b.delayedPhase(ctx, "t-later", "latest", func() time.Time {
		due = time.Now().Add(delayedLead).Truncate(time.Millisecond)
		at := due.UTC().Format(time.RFC3339Nano)
		pctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
		defer cancel()
		pub, perr := publishSeries(pctx, b.c, "bench.t-later", n, 100, 4<<20, 8, func(i int) outMsg { m := gen(i); m.deliverAt = at; return m })
		if perr != nil {
			err = perr
		} else if pub.elapsed > delayedLead {
			r.note("publishing took %s, past the due time", pub.elapsed.Round(time.Millisecond))
		}
		b.logf("t: parked %d messages in %s", n, pub.elapsed.Round(time.Millisecond))
		return due
	}, n)
	if err != nil {
		return r.fail(err)
	}
	r.info("immediate drain", fmt.Sprintf("%.0f msg/s", now))
	goal := now / 2
	r.check("delayed drain from the due time", fmt.Sprintf("%.0f msg/s (%.2f of immediate)", later, later/now),
		fmt.Sprintf("≥ %.0f msg/s (half)", goal), later >= goal)
	return r
}

// delayedPhase creates group bench-<name> on topic bench.<name> from consumeFrom,
// runs start (which returns when the messages became available) and returns the
// rate at which n distinct messages arrived after that.
func (b *bench) delayedPhase(ctx context.Context, name, consumeFrom string, start func() time.Time, n int) (float64, error) {
	sk, url := b.rcv.newSink(name)
	var from time.Time
	if consumeFrom == "earliest" {
		from = start()
	}
	secret, err := b.c.createGroup(ctx, groupSpec{name: "bench-" + name, topic: "bench." + name, endpoint: url, consumeFrom: consumeFrom, batchSize: 1, maxInFlight: 64})
	if err != nil {
		return 0, err
	}
	_ = sk.setSecret(secret)
	if consumeFrom != "earliest" {
		from = start()
	}
	dctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	defer cancel()
	if !sk.waitDistinct(dctx, n) {
		return 0, fmt.Errorf("%s: %d of %d received in %s", name, sk.stats().distinct, n, b.opts.phaseTimeout)
	}
	if err := b.c.pauseGroup(ctx, "bench-"+name); err != nil {
		b.logf("t: pause bench-%s: %v", name, err)
	}
	return float64(n) / sk.stats().last.Sub(from).Seconds(), nil
}
