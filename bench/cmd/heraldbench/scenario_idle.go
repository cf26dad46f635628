package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// idleSettle is how long an idle scenario waits before it measures, so that group
// creation, lease taking and the first polls are over.
const idleSettle = 5 * time.Second

// scenarioIdle is (e): Herald with no consumer group, nothing published, measured for
// -idle-duration: Redis commands/s, MySQL statements/s and CPU.
func (b *bench) scenarioIdle(ctx context.Context) *result {
	r := &result{key: "e", title: fmt.Sprintf("idle, no groups (%s)", b.opts.idleDur)}
	b.measureIdle(ctx, r, 20, 1)
	return r
}

// scenarioIdleGroups is (f): -idle-groups groups (batch 1, consume_from latest) on one
// 4-queue topic, nothing published, measured as (e).
func (b *bench) scenarioIdleGroups(ctx context.Context) *result {
	n := b.opts.idleGroups
	r := &result{key: "f", title: fmt.Sprintf("idle, %d groups on a 4-queue topic (%s)", n, b.opts.idleDur)}
	topic := "bench.f"
	if _, err := b.c.createTopic(ctx, topic, 4); err != nil {
		return r.fail(err)
	}
	_, url := b.rcv.newSink("f")
	t0 := time.Now()
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				spec := groupSpec{name: fmt.Sprintf("bench-f-%04d", i), topic: topic, endpoint: url, consumeFrom: "latest", batchSize: 1, maxInFlight: 4}
				if _, err := b.c.createGroup(ctx, spec); err != nil {
					errOnce.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return r.fail(fmt.Errorf("create groups: %w", first))
	}
	r.info("groups created", fmt.Sprintf("%d in %s", n, time.Since(t0).Round(time.Millisecond)))
	b.measureIdle(ctx, r, -1, -1)
	return r
}

// measureIdle waits idleSettle, then counts commands and CPU over -idle-duration.
// A positive redisGoal (commands/s) and cpuGoal (% of one core for Herald + Redis +
// MariaDB) turn those figures into checked rows.
func (b *bench) measureIdle(ctx context.Context, r *result, redisGoal, cpuGoal float64) {
	select {
	case <-ctx.Done():
		r.fail(ctx.Err())
		return
	case <-time.After(idleSettle):
	}
	c0, p0 := b.counts.snap(ctx), b.procs.snap()
	select {
	case <-ctx.Done():
		r.fail(ctx.Err())
		return
	case <-time.After(b.opts.idleDur):
	}
	c1, p1 := b.counts.snap(ctx), b.procs.snap()
	cu, pu := c0.until(c1), p0.until(p1)
	if cu.err == nil {
		rate := float64(cu.redisTotal) / cu.wall.Seconds()
		if redisGoal > 0 {
			r.check("Redis commands/s", fmtRate(rate), fmt.Sprintf("≤ %.0f", redisGoal), rate <= redisGoal)
		} else {
			r.info("Redis commands/s", fmtRate(rate))
		}
	}
	r.addCountRows("", cu, 0)
	var sum time.Duration
	known := true
	for _, p := range []struct {
		name string
		d    time.Duration
	}{{"Herald", pu.herald}, {"Redis", pu.redis}, {"MariaDB", pu.mariadb}} {
		if p.d < 0 {
			known = false
			r.info(p.name+" CPU", "n/a")
			continue
		}
		sum += p.d
		r.info(p.name+" CPU", fmt.Sprintf("%.2f %% of a core (%s over %s)", 100*float64(p.d)/float64(pu.wall), p.d.Round(time.Millisecond), pu.wall.Round(time.Millisecond)))
	}
	if known {
		pct := 100 * float64(sum) / float64(pu.wall)
		if v := fmt.Sprintf("%.2f %% of a core", pct); cpuGoal > 0 {
			r.check("Herald + Redis + MariaDB CPU", v, fmt.Sprintf("≤ %.0f %%", cpuGoal), pct <= cpuGoal)
		} else {
			r.info("Herald + Redis + MariaDB CPU", v)
		}
	}
	r.machineRow("", pu)
}
