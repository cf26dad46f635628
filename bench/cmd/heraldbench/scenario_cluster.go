package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	heralddelivery "github.com/heraldhq/herald/internal/delivery"
)

// Goals of scenario k's master kill: deliveries resume within clusterTakeoverGoal of
// the kill (the cluster's own failure detection and promotion, set by
// clusterNodeTimeout, plus Herald's share), and nothing is lost.
const clusterTakeoverGoal = 4 * time.Second

// killAfter is how long into scenario k's second paced phase the busiest master is
// killed.
const killAfter = 3 * time.Second

// scenarioCluster is (k): a private Redis Cluster (three masters, three replicas)
// and a second `herald all` in HERALD_REDIS_MODE=cluster on its own database
// (<schema>_k) of the same MariaDB, with the shape of (h): single-message publishes
// paced at -trickle-rate for -trickle-duration to one group (batch 1). It reports
// Redis commands per message summed over the masters and per node, MySQL statements,
// CPU (Redis = every node) and latency. Then the same pacing again, and killAfter
// into it the master that served the most commands is killed -9: takeover (kill →
// deliveries resume, the end of the longest pause in receipts after the kill), lost
// and duplicates. Skipped, with the reason, when the cluster cannot be made.
func (b *bench) scenarioCluster(ctx context.Context) *result {
	rate := b.opts.trickleRate
	r := &result{key: "k", title: fmt.Sprintf("Redis Cluster (3 masters + 3 replicas, cluster-node-timeout %s): paced %d msg/s single-message publishes, batch 1 (%s), then a master killed",
		clusterNodeTimeout, rate, b.opts.trickleDur)}
	pc, err := startPrivateCluster(ctx)
	if err != nil {
		r.info("skipped", cell(err.Error()))
		r.note("scenario k skipped: the private Redis Cluster could not be made (%v)", err)
		return r
	}
	defer pc.stop()
	b.logf("k: private cluster on %s", pc.seeds())
	kh, err := b.startClusterHerald(ctx, pc)
	if err != nil {
		return r.fail(err)
	}
	defer func() { b.logf("k: stopping cluster herald: %s", kh.stop(15*time.Second)) }() // the last one started
	main := b.c
	defer func() { b.c = main }()
	b.c = kh.client
	r.info("herald", fmt.Sprintf("pid %d, database %s, log %s", kh.proc.pid(), kh.schema, kh.proc.logPath))

	lt, err := b.trickleGroup(ctx, r, "k")
	if err != nil {
		return r.fail(err)
	}
	n := rate * int(b.opts.trickleDur/time.Second)
	w, err := b.clusterWindow(ctx, pc, kh.proc.pid())
	if err != nil {
		return r.fail(err)
	}
	ps := lt.paced(ctx, n, time.Second/time.Duration(rate))
	wctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	lt.sk.waitDistinct(wctx, len(ps.ids)+1)
	cancel()
	use, perNode, err := w.end(ctx)
	if err != nil {
		return r.fail(err)
	}
	lats, missing := lt.latencies(ps.ids)
	r.info("messages", fmt.Sprintf("%d published, %d errors, %d not received", len(ps.ids), ps.errs, missing))
	if len(lats) > 0 {
		r.info("latency p50 / p99", ms(pct(lats, 0.5))+" / "+ms(pct(lats, 0.99)))
	}
	r.publishRows(ps, lt.firstErr)
	r.addLiveRows("", use, perMessage(len(ps.ids)), liveGoals{counts: countGoals{redis: 14, mysql: 1.3}, cpuMs: 0.4})
	masters, err := pc.masters(ctx)
	if err != nil {
		return r.fail(err)
	}
	r.info("Redis commands per message by node", perNodeRow(perNode, masters, len(ps.ids)))
	r.note("k's MySQL counts include the main Herald's idle statements (its groups paused; scenario e measures that rate)")

	// The kill: herald all passes notifications, jobs and reports in memory, so
	// losing a master hardly touches its deliveries (measured: no pause). Restarted
	// with HERALD_IN_PROCESS=false every job goes through asynq's queue, reports
	// and wake-ups through Redis, as between separate processes; the master
	// killed is the one holding the delivery queue's slot.
	b.logf("k: restarting the cluster herald with HERALD_IN_PROCESS=false: %s", kh.stop(15*time.Second))
	if kh, err = b.restartClusterHerald(ctx, kh, "HERALD_IN_PROCESS=false"); err != nil {
		return r.fail(err)
	}
	b.c = kh.client
	b.splitCounts(ctx, r, pc, kh, lt, n/2, rate)
	queueSlot, err := pc.keySlot(ctx, "asynq:{"+heralddelivery.Keys{Namespace: kh.settings.namespace, HashTags: true}.AsynqQueue()+"}:pending")
	if err != nil {
		return r.fail(err)
	}
	victim := ""
	for addr := range masters {
		if owns, err := pc.serves(ctx, addr, queueSlot); err == nil && owns {
			victim = addr
		}
	}
	if victim == "" {
		return r.fail(fmt.Errorf("no master serves the delivery queue's slot %d", queueSlot))
	}
	b.killMaster(ctx, r, pc, lt, victim, queueSlot, n, rate)
	if err := b.c.pauseGroup(ctx, "bench-k"); err != nil {
		r.note("pause bench-k: %v", err)
	}
	return r
}

// splitCounts publishes n messages at rate to k's Herald running with
// HERALD_IN_PROCESS=false and reports Redis commands per message, summed and per
// node: every job then goes through asynq's one queue, so its master carries most
// of them (design §11, spreading the queue).
func (b *bench) splitCounts(ctx context.Context, r *result, pc *privateCluster, kh *clusterHerald, lt *latencyRun, n, rate int) {
	st0 := lt.sk.stats()
	w, err := b.clusterWindow(ctx, pc, kh.proc.pid())
	if err != nil {
		r.note("HERALD_IN_PROCESS=false counts: %v", err)
		return
	}
	ps := lt.paced(ctx, n, time.Second/time.Duration(rate))
	wctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	lt.sk.waitDistinct(wctx, int(st0.distinct)+len(ps.ids))
	cancel()
	use, perNode, err := w.end(ctx)
	if err != nil {
		r.note("HERALD_IN_PROCESS=false counts: %v", err)
		return
	}
	masters, err := pc.masters(ctx)
	if err != nil {
		r.note("HERALD_IN_PROCESS=false counts: %v", err)
		return
	}
	phase := fmt.Sprintf(" (HERALD_IN_PROCESS=false, %d messages)", len(ps.ids))
	r.info("Redis commands per message"+phase, fmt.Sprintf("%s (%d for %d)", fmtRate(float64(use.counts.redisTotal)/float64(max(len(ps.ids), 1))), use.counts.redisTotal, len(ps.ids)))
	r.info("Redis commands by name, per message"+phase, top(use.counts.redis, 12, float64(max(len(ps.ids), 1))))
	r.info("Redis commands per message by node"+phase, perNodeRow(perNode, masters, len(ps.ids)))
}

// killMaster publishes n more messages at rate and, killAfter into it, kills -9 the
// master at victim (slot: one of its slots): rows for the replica's promotion,
// takeover, lost and duplicates.
func (b *bench) killMaster(ctx context.Context, r *result, pc *privateCluster, lt *latencyRun, victim string, slot, n, rate int) {
	st0 := lt.sk.stats()
	var killed time.Time
	promoted := make(chan time.Duration, 1)
	go func() {
		select {
		case <-ctx.Done():
			promoted <- -1
			return
		case <-time.After(killAfter):
		}
		node := pc.node(victim)
		killed = time.Now()
		_ = node.cmd.Process.Kill()
		<-node.exited
		b.logf("k: killed master %s (pid %d)", victim, node.cmd.Process.Pid)
		promoted <- waitPromoted(ctx, pc, victim, slot, killed)
	}()
	ps := lt.paced(ctx, n, time.Second/time.Duration(rate))
	promotion := <-promoted
	wctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	lt.sk.waitDistinct(wctx, int(st0.distinct)+len(ps.ids))
	cancel()
	_, lost := lt.latencies(ps.ids)
	st := lt.sk.stats()
	resumed := resumedAfter(lt.sk, killed)
	r.info("master killed", fmt.Sprintf("%s, holding the delivery queue (slot %d), %s into %d more publishes at %d/s; Herald restarted with HERALD_IN_PROCESS=false",
		victim, slot, killAfter, n, rate))
	if promotion >= 0 {
		r.info("replica promoted (cluster's failure detection)", fmt.Sprintf("%s after the kill", promotion.Round(time.Millisecond)))
	} else {
		r.info("replica promoted (cluster's failure detection)", "not seen within 30 s")
	}
	r.check("takeover (kill → deliveries resume)", resumed.Round(time.Millisecond).String(), "≤ "+clusterTakeoverGoal.String(),
		resumed <= clusterTakeoverGoal)
	if promotion >= 0 {
		r.info("Herald's share of the takeover (promotion → deliveries resume)", (resumed - promotion).Round(time.Millisecond).String())
	}
	r.check("lost (accepted, never delivered)", fmt.Sprintf("%d of %d", lost, len(ps.ids)), "0", lost == 0)
	r.info("duplicates (repeats of a delivered webhook-id)", fmt.Sprint(st.dups-st0.dups))
	r.publishRows(ps, lt.firstErr)
}

// waitPromoted polls (every 10 ms, up to 30 s) until a live master other than victim
// serves slot, and returns how long after killed that was first seen; -1 if never.
func waitPromoted(ctx context.Context, pc *privateCluster, victim string, slot int, killed time.Time) time.Duration {
	end := killed.Add(30 * time.Second)
	for time.Now().Before(end) && ctx.Err() == nil {
		for _, nd := range pc.live() {
			ranges, err := nd.rdb.ClusterSlots(ctx).Result() //nolint:staticcheck // slot ranges with their master
			if err != nil {
				continue
			}
			for _, rg := range ranges {
				if slot >= rg.Start && slot <= rg.End && len(rg.Nodes) > 0 && rg.Nodes[0].Addr != victim {
					if m := pc.node(rg.Nodes[0].Addr); m != nil && m.alive() {
						return time.Since(killed)
					}
				}
			}
			break // the first live node's view, as a client reloading its slot map sees it
		}
		time.Sleep(10 * time.Millisecond) // polling a server state that sends no signal
	}
	return -1
}

// resumedAfter returns how long after since deliveries resumed: the end of the
// longest pause between first receipts from since on (since counts as a receipt).
// POSTs in flight at a failure still land; then nothing arrives until Herald
// delivers again.
func resumedAfter(s *sink, since time.Time) time.Duration {
	s.mu.Lock()
	var at []time.Time
	for _, d := range s.got {
		if !d.at.Before(since) {
			at = append(at, d.at)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	var gap, resumed time.Duration
	prev := since
	for _, a := range at {
		if a.Sub(prev) > gap {
			gap, resumed = a.Sub(prev), a.Sub(since)
		}
		prev = a
	}
	return resumed
}

// clusterHerald is scenario k's `herald all` on the private cluster.
type clusterHerald struct {
	proc     *heraldProc
	client   *apiClient
	schema   string
	settings heraldSettings
}

func (k *clusterHerald) stop(grace time.Duration) string { return k.proc.stop(grace) }

// startClusterHerald recreates <schema>_k on the benchmark's MariaDB, migrates it and
// starts `herald all` with HERALD_REDIS_MODE=cluster on pc, logged in with an API
// key for bench.*.
func (b *bench) startClusterHerald(ctx context.Context, pc *privateCluster) (*clusterHerald, error) {
	cfg, err := mysql.ParseDSN(b.opts.dsn)
	if err != nil {
		return nil, err
	}
	cfg.DBName = b.schema + "_k"
	dsn := cfg.FormatDSN()
	if err := recreateDatabase(ctx, dsn); err != nil {
		return nil, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	hs := heraldSettings{binary: b.opts.herald, dsn: dsn, redisAddr: pc.seeds(), namespace: "benchk" + randomHex(4),
		httpAddr: httpAddr, admin: "bench", password: randomHex(16), extra: []string{"HERALD_REDIS_MODE=cluster"}}
	if err := migrateUp(ctx, hs); err != nil {
		return nil, err
	}
	return b.launchClusterHerald(ctx, hs, cfg.DBName, "-k.herald.log")
}

// restartClusterHerald starts k's Herald again (k stopped) on the same database and
// cluster with extra settings added.
func (b *bench) restartClusterHerald(ctx context.Context, k *clusterHerald, extra ...string) (*clusterHerald, error) {
	hs := k.settings
	hs.extra = append(slices.Clone(hs.extra), extra...)
	return b.launchClusterHerald(ctx, hs, k.schema, "-k2.herald.log")
}

// launchClusterHerald starts `herald all` with hs and logs in with an API key for
// bench.*; its log is the run's stem + suffix.
func (b *bench) launchClusterHerald(ctx context.Context, hs heraldSettings, schema, suffix string) (*clusterHerald, error) {
	logPath := filepath.Join(b.opts.results, b.start.Format("2006-01-02-1504")+suffix)
	hp, err := startHerald(hs, logPath)
	if err != nil {
		return nil, err
	}
	k := &clusterHerald{proc: hp, schema: schema, client: newAPIClient(hp.baseURL), settings: hs}
	if err := hp.waitReady(ctx, 60*time.Second); err != nil {
		hp.stop(5 * time.Second)
		return nil, errors.Join(err, logTailError(hp.logPath))
	}
	if err := k.client.login(ctx, hs.admin, hs.password); err != nil {
		hp.stop(5 * time.Second)
		return nil, err
	}
	if err := k.client.createAPIKey(ctx, []string{"bench.*"}); err != nil {
		hp.stop(5 * time.Second)
		return nil, err
	}
	return k, nil
}

// clusterWin is a live window of scenario k: counts summed over the masters and per
// node, CPU of the cluster Herald, MariaDB and every node.
type clusterWin struct {
	pc     *privateCluster
	b      *bench
	nodes0 map[string]map[string]int64
	c0     countSnap
	p0     cpuSnap
	procs  processes
}

func (b *bench) clusterWindow(ctx context.Context, pc *privateCluster, heraldPid int) (*clusterWin, error) {
	w := &clusterWin{pc: pc, b: b, procs: processes{herald: heraldPid, mariadb: b.procs.mariadb}}
	var err error
	if w.nodes0, err = pc.commandstats(ctx); err != nil {
		return nil, err
	}
	w.c0 = b.counts.snap(ctx)
	w.p0 = w.procs.snap()
	w.p0.redis = pc.cpu()
	return w, nil
}

// end waits liveSettle and returns the window's use (Redis: the masters summed,
// since a replica's commandstats repeat its master's writes; the window's own
// INFO calls removed) and each node's commands, replicas included.
func (w *clusterWin) end(ctx context.Context) (liveUse, map[string]int64, error) {
	select {
	case <-ctx.Done():
	case <-time.After(liveSettle):
	}
	nodes1, err := w.pc.commandstats(ctx)
	if err != nil {
		return liveUse{}, nil, err
	}
	masters, err := w.pc.masters(ctx)
	if err != nil {
		return liveUse{}, nil, err
	}
	c1 := w.b.counts.snap(ctx)
	p1 := w.procs.snap()
	p1.redis = w.pc.cpu()
	counts := w.c0.until(c1)
	counts.redis, counts.redisTotal = map[string]int64{}, 0
	perNode := map[string]int64{}
	for addr, after := range nodes1 {
		for cmd, v := range after {
			d := v - w.nodes0[addr][cmd]
			if cmd == "info" {
				d-- // the window's own INFO commandstats on this node
			}
			if d <= 0 {
				continue
			}
			perNode[addr] += d
			if _, master := masters[addr]; master { // a replica's count repeats its master's writes
				counts.redis[cmd] += d
				counts.redisTotal += d
			}
		}
	}
	return liveUse{counts: counts, cpu: w.p0.until(p1)}, perNode, nil
}

// perNodeRow writes each node's commands per message, masters first.
func perNodeRow(perNode map[string]int64, masters map[string]int, n int) string {
	addrs := make([]string, 0, len(perNode))
	for a := range perNode {
		addrs = append(addrs, a)
	}
	for a := range masters {
		if _, ok := perNode[a]; !ok {
			addrs = append(addrs, a)
		}
	}
	sort.Slice(addrs, func(i, j int) bool {
		_, mi := masters[addrs[i]]
		_, mj := masters[addrs[j]]
		if mi != mj {
			return mi
		}
		return addrs[i] < addrs[j]
	})
	var parts []string
	for _, a := range addrs {
		role := "replica"
		if _, ok := masters[a]; ok {
			role = "master"
		}
		parts = append(parts, fmt.Sprintf("%s (%s) %s", a, role, fmtRate(float64(perNode[a])/float64(max(n, 1)))))
	}
	return strings.Join(parts, ", ")
}
