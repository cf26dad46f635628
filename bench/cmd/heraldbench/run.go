package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/bench/internal/procstat"
)

// bench is what every scenario uses.
type bench struct {
	opts     options
	c        *apiClient
	rcv      *receiver
	procs    processes
	db       *sql.DB
	schema   string
	fixtures []fixture
	counts   counters
	start    time.Time
	// metricsAddr is host:port of Herald's metrics listener (stage trace).
	metricsAddr string
	// nodeServers are the extra mariadbd servers scenario n started as db nodes.
	nodeServers []*nodeServer
	// settings and stem are the Herald settings and report path stem of the run
	// (scenario x starts more Herald processes).
	settings heraldSettings
	stem     string
}

// logf prints progress to stderr.
func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] "+format+"\n", append([]any{time.Since(b.start).Seconds()}, args...)...)
}

// run sets everything up, runs the selected scenarios, stops Herald and writes the report.
func run(ctx context.Context, o options) error {
	b := &bench{opts: o, start: time.Now()}
	defer b.stopNodeServers() // after Herald stopped: it may still reach a second db node
	if err := os.MkdirAll(o.results, 0o755); err != nil {
		return err
	}
	stem := reportStem(o.results, b.start)
	if o.has("b") {
		fx, err := loadFixtures(o.fixtures)
		if err != nil {
			return fmt.Errorf("fixtures: %w", err)
		}
		b.fixtures = fx
	}
	if _, err := os.Stat(o.herald); err != nil {
		return fmt.Errorf("herald binary: %w (build it with go build -o bin/herald ./cmd/herald)", err)
	}
	var notes []string
	if o.private {
		b.logf("starting a private mariadbd and redis-server")
		ps, err := startPrivateServers(ctx)
		if err != nil {
			notes = append(notes, "private servers not started, shared ones used (counts and CPU include other clients): "+cell(err.Error()))
			b.opts.private, o.private = false, false
		} else {
			defer ps.stop()
			o.dsn, o.redisAddr = ps.dsn("herald_bench"), ps.redisAddr
			b.opts.dsn, b.opts.redisAddr = o.dsn, o.redisAddr
			b.procs.mariadb, b.procs.redis = ps.mariadb.Process.Pid, ps.redis.Process.Pid
			notes = append(notes, fmt.Sprintf("private mariadbd (pid %d, %s) and redis-server (pid %d, %s): counts and server CPU are Herald's and the benchmark's alone",
				b.procs.mariadb, ps.mysqlAddr, b.procs.redis, ps.redisAddr))
		}
	}
	cfg, err := mysql.ParseDSN(o.dsn)
	if err != nil {
		return fmt.Errorf("-mysql-dsn: %w", err)
	}
	b.schema = cfg.DBName

	if !o.private {
		if pid, err := procstat.FindByComm("mariadbd", "mysqld"); err == nil {
			b.procs.mariadb = pid
		} else {
			notes = append(notes, "MariaDB CPU not measured: "+err.Error())
		}
		if pid, err := procstat.FindByComm("redis-server"); err == nil {
			b.procs.redis = pid
		} else {
			notes = append(notes, "Redis CPU not measured: "+err.Error())
		}
	}

	idle := b.waitQuiet(ctx)
	b.logf("recreating database %s", b.schema)
	if err := recreateDatabase(ctx, o.dsn); err != nil {
		return err
	}
	if b.db, err = sql.Open("mysql", o.dsn); err != nil {
		return err
	}
	defer b.db.Close()
	rdb := redis.NewClient(&redis.Options{Addr: o.redisAddr})
	defer rdb.Close()
	b.counts = counters{rdb: rdb, db: b.db}
	fl := measureFloors(ctx, b.db, o.redisAddr)
	fl.background = idle
	b.logf("floors: MariaDB commit %s; Redis PING %s", fl.commit, fl.redisRTT)
	httpAddr, err := freeAddr()
	if err != nil {
		return err
	}
	hs := heraldSettings{binary: o.herald, dsn: o.dsn, redisAddr: o.redisAddr, namespace: "bench" + randomHex(4),
		httpAddr: httpAddr, admin: "bench", password: randomHex(16)}
	for _, kv := range strings.Split(o.heraldEnv, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			if !strings.HasPrefix(kv, "HERALD_") || !strings.Contains(kv, "=") {
				return fmt.Errorf("-herald-env: %q is not a HERALD_NAME=value pair", kv)
			}
			hs.extra = append(hs.extra, kv)
		}
	}
	if o.stageTrace && o.has("l") {
		hs.extra = append(hs.extra, "HERALD_STAGE_TRACE=true")
	}
	b.settings, b.stem = hs, stem
	b.logf("herald migrate up")
	if err := migrateUp(ctx, hs); err != nil {
		return err
	}
	hp, err := startHerald(hs, stem+".herald.log")
	if err != nil {
		return err
	}
	stopped := ""
	defer func() {
		if stopped == "" {
			b.logf("stopping herald: %s", hp.stop(15*time.Second))
		}
	}()
	b.procs.herald = hp.pid()
	b.metricsAddr = hp.metrics
	b.logf("herald pid %d on %s (namespace %s), log %s", hp.pid(), httpAddr, hs.namespace, hp.logPath)
	if err := hp.waitReady(ctx, 60*time.Second); err != nil {
		return errors.Join(err, logTailError(hp.logPath))
	}
	if b.rcv, err = startReceiver(); err != nil {
		return err
	}
	defer b.rcv.close()
	b.c = newAPIClient(hp.baseURL)
	if err := b.c.login(ctx, hs.admin, hs.password); err != nil {
		return errors.Join(err, logTailError(hp.logPath))
	}
	if err := b.c.createAPIKey(ctx, []string{"bench.*"}); err != nil {
		return errors.Join(err, logTailError(hp.logPath))
	}
	if o.cpuprofileHerald {
		printProfileHint(hp)
	}

	scenarios := map[string]func(context.Context) *result{
		"a": b.scenarioDrain1K, "b": b.scenarioDrainGitHub, "c": b.scenarioPublish, "d": b.scenarioLatency,
		"e": b.scenarioIdle, "f": b.scenarioIdleGroups, "g": b.scenarioLone, "h": b.scenarioTrickle,
		"k": b.scenarioCluster, "l": b.scenarioLoneRate, "o": b.scenarioFanout, "s": b.scenarioSaturation, "n": b.scenarioNodes,
		"x": b.scenarioSplit, "t": b.scenarioDelayed,
	}
	var results []*result
	for _, key := range o.selected() {
		if ctx.Err() != nil {
			break
		}
		b.logf("scenario %s", key)
		var r *result
		if !hp.alive() {
			r = (&result{key: key, title: "not run"}).fail(fmt.Errorf("herald exited (%v)", hp.waitErr))
		} else {
			r = scenarios[key](ctx)
		}
		if r.err != nil {
			b.logf("scenario %s: %v", key, r.err)
		}
		results = append(results, r)
	}
	if ctx.Err() != nil {
		notes = append(notes, "run interrupted: "+ctx.Err().Error())
	}
	heraldAlive := hp.alive()
	stopped = hp.stop(15 * time.Second)
	b.logf("stopping herald: %s", stopped)
	if !heraldAlive {
		notes = append(notes, fmt.Sprintf("herald exited during the run (%v)", hp.waitErr))
	}

	rep := report{
		when: b.start, opts: o, machine: describeMachine(context.Background(), b.db), namespace: hs.namespace, floors: fl,
		results: results, notes: notes, stop: stopped, log: scanHeraldLog(hp.logPath),
	}
	text := rep.markdown()
	if err := os.WriteFile(stem+".md", []byte(text), 0o644); err != nil {
		return err
	}
	fmt.Println(text)
	b.logf("report written to %s.md", stem)
	return nil
}

// reportStem returns bench/results/YYYY-MM-DD-HHMM, with -2, -3 … if taken.
func reportStem(dir string, t time.Time) string {
	base := filepath.Join(dir, t.Format("2006-01-02-1504"))
	stem := base
	for i := 2; ; i++ {
		if _, err := os.Stat(stem + ".md"); errors.Is(err, os.ErrNotExist) {
			return stem
		}
		stem = fmt.Sprintf("%s-%d", base, i)
	}
}

func printProfileHint(hp *heraldProc) {
	fmt.Fprintf(os.Stderr, `-cpuprofile-herald: nothing is fetched. Herald (pid %d) serves no /debug/pprof today.
  To profile a scenario, run in another shell while it is running:
    perf record -F 999 -g -p %d -- sleep 10 && perf report
  or, if Herald registers net/http/pprof on its metrics listener (%s):
    go tool pprof -seconds 10 http://%s/debug/pprof/profile
`, hp.pid(), hp.pid(), hp.metrics, hp.metrics)
}

// waitQuiet measures the machine's background load over 1 s, repeating for up to
// -wait-quiet while it is above 0.25 cores; it returns the last figure (-1 unknown).
func (b *bench) waitQuiet(ctx context.Context) float64 {
	end := time.Now().Add(b.opts.waitQuiet)
	for {
		load, err := backgroundLoad(time.Second)
		if err != nil {
			return -1
		}
		if load < 0.25 || time.Now().After(end) || ctx.Err() != nil {
			return load
		}
		b.logf("background load %.2f cores; waiting for a quiet machine", load)
		select {
		case <-ctx.Done():
			return load
		case <-time.After(2 * time.Second):
		}
	}
}
