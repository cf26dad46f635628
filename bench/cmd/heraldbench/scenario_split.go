package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald/bench/internal/procstat"
)

// Goals of (x) per message for the three role processes together with MariaDB and
// Redis, at the paced rate of (h).
const (
	splitRedisGoal = 3
	splitMySQLGoal = 1.1
	splitCPUGoal   = 0.9
	// splitCPURatioGoal bounds the split deployment's Herald + MariaDB + Redis CPU
	// per message as a multiple of `herald all`'s in the same run.
	splitCPURatioGoal = 1.5
)

// splitRoles are the processes of (x)'s separate-role deployment, in start order.
var splitRoles = []string{"api", "dispatcher", "worker"}

// scenarioSplit is (x): the paced single-message shape of (h) (-trickle-rate for
// -trickle-duration, one group, batch 1, 1 KiB bodies) twice in one run: first to
// the `herald all` under test, then to `herald api`, `herald dispatcher` and
// `herald worker` run as three processes on a database and namespace of their own
// (same MariaDB and Redis servers). Both report Redis commands by name, MySQL Com_*
// and CPU per message (per process for the three roles) and latency; the split
// deployment is checked against ≤ 3 Redis commands, ≤ 1.1 MySQL statements and
// ≤ 0.9 CPU-ms per message of all processes together, and against ≤ 1.5 × the
// CPU-ms per message of the `herald all` phase of the same run.
func (b *bench) scenarioSplit(ctx context.Context) *result {
	rate := b.opts.trickleRate
	r := &result{key: "x", title: fmt.Sprintf("separate api, dispatcher and worker processes beside herald all: paced %d msg/s single-message publishes, one group, batch 1 (%s)", rate, b.opts.trickleDur)}
	lt, err := b.trickleGroup(ctx, r, "x")
	if err != nil {
		return r.fail(err)
	}
	allCPU := b.pacedPhase(ctx, r, lt, " (herald all)", liveGoals{})
	if err := b.c.pauseGroup(ctx, "bench-x"); err != nil {
		r.note("pause bench-x: %v", err)
	}

	sp, err := b.startSplit(ctx)
	if sp != nil {
		defer func() { b.logf("stopping the split roles: %s", sp.stop()) }()
	}
	if err != nil {
		return r.fail(err)
	}
	sb := *b // the same servers and receiver, the split deployment's api
	sb.c, sb.procs = sp.client, processes{mariadb: b.procs.mariadb, redis: b.procs.redis}
	slt, err := sb.trickleGroup(ctx, r, "x")
	if err != nil {
		return r.fail(err)
	}
	pids := sp.pids()
	c0, p0, s0 := b.counts.snap(ctx), sb.procs.snap(), snapPids(pids)
	end := func() liveUse {
		select {
		case <-ctx.Done():
		case <-time.After(liveSettle):
		}
		u := liveUse{counts: c0.until(b.counts.snap(ctx)), cpu: p0.until(sb.procs.snap())}
		return u
	}
	n := rate * int(b.opts.trickleDur/time.Second)
	ps := slt.paced(ctx, n, time.Second/time.Duration(rate))
	wctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	slt.sk.waitDistinct(wctx, len(ps.ids)+1)
	cancel()
	use := end()
	roles := snapPids(pids).since(s0)
	use.cpu.herald = 0
	for _, d := range roles {
		if d < 0 {
			use.cpu.herald = -1
			break
		}
		use.cpu.herald += d
	}
	phase := " (api + dispatcher + worker)"
	slt.latencyInfo(r, ps, phase)
	r.publishRows(ps, slt.firstErr)
	for i, role := range splitRoles {
		metric := "herald " + role + " CPU per message"
		if roles[i] < 0 || len(ps.ids) == 0 {
			r.info(metric, "n/a")
			continue
		}
		r.info(metric, cpuPer(roles[i], use.cpu.wall, len(ps.ids)))
	}
	r.addLiveRows(phase, use, perMessage(len(ps.ids)), liveGoals{counts: countGoals{redis: splitRedisGoal, mysql: splitMySQLGoal}, cpuMs: splitCPUGoal})
	metric := "Herald + MariaDB + Redis CPU per message, api + dispatcher + worker ÷ herald all"
	if split := use.cpu.perMessage(len(ps.ids)); split > 0 && allCPU > 0 {
		x := split / allCPU
		r.ceiling(metric, fmt.Sprintf("%.2f × (%.4f ms ÷ %.4f ms)", x, split, allCPU), x, splitCPURatioGoal, " ×")
	} else {
		r.check(metric, "n/a", fmt.Sprintf("≤ %g ×", splitCPURatioGoal), false)
	}
	r.note("the `herald all` under test stays up and idle during the split phase: its idle commands (about 8 Redis and 3 MySQL per second, scenario e) are in the split counts")
	if err := sb.c.pauseGroup(ctx, "bench-x"); err != nil {
		r.note("pause bench-x (split): %v", err)
	}
	for _, w := range sp.warnings() {
		r.note("%s", w)
	}
	return r
}

// pacedPhase publishes (h)'s paced series through lt and adds latency, counts and
// CPU per message with phase appended to every metric. It returns the CPU-ms per
// message of Herald + MariaDB + Redis (0: unknown).
func (b *bench) pacedPhase(ctx context.Context, r *result, lt *latencyRun, phase string, g liveGoals) float64 {
	rate := b.opts.trickleRate
	n := rate * int(b.opts.trickleDur/time.Second)
	end := b.startWindow(ctx)
	ps := lt.paced(ctx, n, time.Second/time.Duration(rate))
	wctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	lt.sk.waitDistinct(wctx, len(ps.ids)+1)
	cancel()
	use := end()
	lt.latencyInfo(r, ps, phase)
	r.publishRows(ps, lt.firstErr)
	r.addLiveRows(phase, use, perMessage(len(ps.ids)), g)
	return use.cpu.perMessage(len(ps.ids))
}

// latencyInfo adds the messages row and latency p50 / p99 of a paced series.
func (lt *latencyRun) latencyInfo(r *result, ps publishStats, phase string) {
	lats, missing := lt.latencies(ps.ids)
	r.info("messages"+phase, fmt.Sprintf("%d published, %d errors, %d not received", len(ps.ids), ps.errs, missing))
	if len(lats) > 0 {
		r.info("latency p50 / p99"+phase, ms(pct(lats, 0.5))+" / "+ms(pct(lats, 0.99)))
	}
}

// splitDeployment is (x)'s three role processes and the client of its api.
type splitDeployment struct {
	procs  []*heraldProc
	client *apiClient
}

// startSplit creates database <schema>_split, migrates it and starts `herald api`,
// `herald dispatcher` and `herald worker` on it with a namespace of their own, then
// logs in and creates an API key for bench.*. On error the processes started so far
// are in the returned deployment, for the caller to stop.
func (b *bench) startSplit(ctx context.Context) (*splitDeployment, error) {
	cfg, err := mysql.ParseDSN(b.opts.dsn)
	if err != nil {
		return nil, err
	}
	cfg.DBName += "_split"
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	hs := b.settings
	hs.dsn, hs.namespace, hs.httpAddr = cfg.FormatDSN(), "benchx"+randomHex(4), httpAddr
	if err := recreateDatabase(ctx, hs.dsn); err != nil {
		return nil, err
	}
	if err := migrateUp(ctx, hs); err != nil {
		return nil, err
	}
	sp := &splitDeployment{}
	for _, role := range splitRoles {
		p, err := startRole(hs, role, b.stem+".split-"+role+".log")
		if err != nil {
			return sp, err
		}
		sp.procs = append(sp.procs, p)
		b.logf("herald %s pid %d, log %s", role, p.pid(), p.logPath)
	}
	if err := sp.procs[0].waitReady(ctx, 60*time.Second); err != nil {
		return sp, errors.Join(err, logTailError(sp.procs[0].logPath))
	}
	for _, p := range sp.procs[1:] {
		if !p.alive() {
			return sp, errors.Join(fmt.Errorf("%s exited (%v)", p.logPath, p.waitErr), logTailError(p.logPath))
		}
	}
	sp.client = newAPIClient(sp.procs[0].baseURL)
	if err := sp.client.login(ctx, hs.admin, hs.password); err != nil {
		return sp, err
	}
	return sp, sp.client.createAPIKey(ctx, []string{"bench.*"})
}

func (sp *splitDeployment) pids() []int {
	var out []int
	for _, p := range sp.procs {
		out = append(out, p.pid())
	}
	return out
}

// stop stops the roles in reverse order and says how each ended.
func (sp *splitDeployment) stop() string {
	var out []string
	for i := len(sp.procs) - 1; i >= 0; i-- {
		out = append(out, splitRoles[i]+": "+sp.procs[i].stop(15*time.Second))
	}
	return strings.Join(out, "; ")
}

// warnings lists the warnings and errors each role logged.
func (sp *splitDeployment) warnings() []string {
	var out []string
	for i, p := range sp.procs {
		for _, pr := range scanHeraldLog(p.logPath).problems {
			out = append(out, fmt.Sprintf("herald %s: %s %s (%d×)", splitRoles[i], pr.level, cell(pr.msg), pr.count))
		}
	}
	return out
}

// pidCPU is the CPU time of each of a list of processes (-1 unknown).
type pidCPU []time.Duration

func snapPids(pids []int) pidCPU {
	out := make(pidCPU, len(pids))
	for i, pid := range pids {
		d, err := procstat.CPU(pid)
		if err != nil {
			d = -1
		}
		out[i] = d
	}
	return out
}

// since returns the CPU each process used after a (-1 unknown).
func (b pidCPU) since(a pidCPU) pidCPU {
	out := slices.Clone(b)
	for i := range out {
		if a[i] < 0 || b[i] < 0 {
			out[i] = -1
		} else {
			out[i] = b[i] - a[i]
		}
	}
	return out
}
