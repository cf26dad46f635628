package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// idleSettle is how long an idle scenario waits before it measures, so that group
// creation, lease taking and the first polls are over.
const idleSettle = 5 * time.Second

// cursorSettleLimit bounds how long (f) waits, after idleSettle, for the dispatcher's
// cursor claims to end; cursorQuiet is the Com_update count per second it takes for
// "ended" (two consecutive seconds at most that).
const (
	cursorSettleLimit = 30 * time.Second
	cursorQuiet       = 1
)

// idleGoals are the ceilings of an idle scenario; zero is no goal. cpuPct is the
// CPU of Herald + Redis + MariaDB together in % of one core.
type idleGoals struct {
	counts countGoals // per second
	cpuPct float64
}

// scenarioIdle is (e): Herald with no consumer group, nothing published, measured for
// -idle-duration after idleSettle. Goals: ≤ 20 Redis commands/s, ≤ 1 % of a core.
func (b *bench) scenarioIdle(ctx context.Context) *result {
	r := &result{key: "e", title: fmt.Sprintf("idle, no groups (%s)", b.opts.idleDur)}
	if !sleepCtx(ctx, idleSettle) {
		return r.fail(ctx.Err())
	}
	b.measureIdle(ctx, r, idleGoals{counts: countGoals{redis: 20}, cpuPct: 1})
	return r
}

// scenarioIdleGroups is (f): -idle-groups groups (batch 1, consume_from latest) on one
// 4-queue topic, nothing published, measured as (e) once the groups' cursors have
// been claimed (settleCursors). Goals: ≤ 5 MySQL statements/s, ≤ 3 % of a core.
func (b *bench) scenarioIdleGroups(ctx context.Context) *result {
	n := b.opts.idleGroups
	r := &result{key: "f", title: fmt.Sprintf("idle, %d groups on a 4-queue topic (%s)", n, b.opts.idleDur)}
	topic := "bench.f"
	if _, err := b.c.createTopic(ctx, topic, 4); err != nil {
		return r.fail(err)
	}
	_, url := b.rcv.newSink("f")
	updates0, err := b.counts.status(ctx, "Com_update")
	if err != nil {
		r.note("Com_update before the groups: %v", err)
	}
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
	if !sleepCtx(ctx, idleSettle) {
		return r.fail(ctx.Err())
	}
	b.settleCursors(ctx, r, t0, updates0)
	b.measureIdle(ctx, r, idleGoals{counts: countGoals{mysql: 5}, cpuPct: 3})
	return r
}

// settleCursors reads Com_update once a second until two consecutive seconds saw at
// most cursorQuiet UPDATEs (the dispatcher has claimed every cursor), for at most
// cursorSettleLimit, and reports the readings and the UPDATEs since the first group
// create (updates0: Com_update then).
func (b *bench) settleCursors(ctx context.Context, r *result, created time.Time, updates0 int64) {
	prev, err := b.counts.status(ctx, "Com_update")
	if err != nil {
		r.note("cursor settle skipped: %v", err)
		return
	}
	var readings []string
	quiet := 0
	end := time.Now().Add(cursorSettleLimit)
	for quiet < 2 && time.Now().Before(end) {
		if !sleepCtx(ctx, time.Second) {
			return
		}
		cur, err := b.counts.status(ctx, "Com_update")
		if err != nil {
			r.note("cursor settle stopped: %v", err)
			return
		}
		d := cur - prev
		prev = cur
		readings = append(readings, fmt.Sprint(d))
		if d <= cursorQuiet {
			quiet++
		} else {
			quiet = 0
		}
	}
	v := fmt.Sprintf("measuring from %s after the first group create (%d UPDATEs since); Com_update per second after the %s settle: %s",
		time.Since(created).Round(100*time.Millisecond), prev-updates0, idleSettle, strings.Join(readings, ", "))
	if quiet < 2 {
		v = fmt.Sprintf("not settled within %s; ", cursorSettleLimit) + v
	}
	r.info("cursor claims settled", v)
}

// measureIdle counts commands and CPU over -idle-duration; g turns the rates and the
// CPU of Herald + Redis + MariaDB into checked rows.
func (b *bench) measureIdle(ctx context.Context, r *result, g idleGoals) {
	c0, p0 := b.counts.snap(ctx), b.procs.snap()
	if !sleepCtx(ctx, b.opts.idleDur) {
		r.fail(ctx.Err())
		return
	}
	c1, p1 := b.counts.snap(ctx), b.procs.snap()
	cu, pu := c0.until(c1), p0.until(p1)
	r.addCountRows("", cu, g.counts)
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
	const metric = "Herald + Redis + MariaDB CPU"
	switch pct := 100 * float64(sum) / float64(pu.wall); {
	case known:
		r.ceiling(metric, fmt.Sprintf("%.2f %% of a core", pct), pct, g.cpuPct, " %")
	case g.cpuPct > 0:
		r.check(metric, "n/a", fmt.Sprintf("≤ %g %%", g.cpuPct), false)
	}
	r.machineRow("", pu)
}

// sleepCtx sleeps d; it returns false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
