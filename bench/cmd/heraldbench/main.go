// Command heraldbench measures Herald end to end on one machine: it recreates a
// database, starts `herald all` as a subprocess, receives its webhooks on a loopback
// endpoint and writes a markdown report to bench/results/. See bench/README.md.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// options are the command-line flags.
type options struct {
	herald, fixtures, results string
	dsn, redisAddr            string
	scenarios                 string
	drainN, githubN, publishN int
	delayedN                  int
	publishers, latencyRate   int
	publishDur, latencyDur    time.Duration
	phaseTimeout, waitQuiet   time.Duration
	cpuprofileHerald          bool
	private                   bool
	idleDur, trickleDur       time.Duration
	idleGroups, trickleRate   int
	// Scenario s: publishers, publishing time and a message cap.
	saturationPublishers, saturationMax int
	saturationDur                       time.Duration
	// Scenario o: groups, paced publishes per second and publishing time.
	fanoutGroups, fanoutRate int
	fanoutDur                time.Duration
	// heraldEnv are extra NAME=value settings for the Herald under test.
	heraldEnv string
	// Scenario l: the lone rate and count, and the crowd's rate, publishers and time.
	loneRate, loneN, loneBusyRate, loneBusyPublishers int
	loneBusyDur                                       time.Duration
	// loneFloorN is how many messages each of scenario l's stand-in series sends.
	loneFloorN int
	// stageTrace starts Herald with HERALD_STAGE_TRACE when scenario l runs.
	stageTrace bool
	// Scenario n: drained messages per drain, publishing time per throughput phase,
	// distinct keys of the keyed variants.
	nodesDrainN, nodesKeys int
	nodesDur               time.Duration
}

// defaultScenarios is the default order: (e) must see no group at all, and (f)'s
// 1,000 groups come last so they do not weigh on the others.
const defaultScenarios = "e,g,l,h,k,x,d,s,o,a,b,t,c,n,f"

func parseFlags() options {
	var o options
	flag.StringVar(&o.herald, "herald", "bin/herald", "path of the herald binary")
	flag.StringVar(&o.heraldEnv, "herald-env", "", "extra HERALD_* settings for the Herald under test, comma-separated NAME=value pairs (e.g. HERALD_PUBLISH_LANES=2); the report lists them")
	flag.StringVar(&o.fixtures, "fixtures", "testdata/github-webhooks", "directory of GitHub webhook JSON files with index.tsv (scenario b)")
	flag.StringVar(&o.results, "results", "bench/results", "directory for the report and Herald's log")
	flag.StringVar(&o.dsn, "mysql-dsn", "root@tcp(127.0.0.1:3306)/herald_bench", "DSN of the benchmark database; it is DROPPED and recreated")
	flag.StringVar(&o.redisAddr, "redis-addr", "127.0.0.1:6379", "Redis address (a fresh namespace is used per run)")
	flag.StringVar(&o.scenarios, "scenarios", defaultScenarios, "scenarios to run, in this order: a drain 1 KiB, b drain GitHub payloads, c publish throughput, d latency, e idle without groups, l lone messages at -lone-rate beside -lone-busy-rate, f idle with -idle-groups groups, g lone messages, h paced single-message publishes, k (h) on a private Redis Cluster and a master killed, s live saturation, o fan-out to -fanout-groups groups, n one db node against two (a second private mariadbd added as a node), x (h) against separate api, dispatcher and worker processes beside herald all, t delayed messages due at once against a backlog drain")
	flag.BoolVar(&o.private, "private", true, "start a private mariadbd and redis-server for the run (exact command counts and CPU); false uses -mysql-dsn and -redis-addr")
	flag.DurationVar(&o.idleDur, "idle-duration", 10*time.Second, "measured time of the idle scenarios e and f")
	flag.IntVar(&o.idleGroups, "idle-groups", 1000, "groups in scenario f")
	flag.IntVar(&o.trickleRate, "trickle-rate", 500, "paced publishes per second in scenario h")
	flag.DurationVar(&o.trickleDur, "trickle-duration", 10*time.Second, "paced publishing time in scenario h (whole seconds)")
	flag.IntVar(&o.saturationPublishers, "saturation-publishers", 32, "concurrent unpaced single-message publishers in scenario s")
	flag.DurationVar(&o.saturationDur, "saturation-duration", 10*time.Second, "longest publishing time in scenario s")
	flag.IntVar(&o.saturationMax, "saturation-max", 200000, "most messages published in scenario s")
	flag.IntVar(&o.fanoutGroups, "fanout-groups", 10, "groups subscribed to the topic in scenario o")
	flag.IntVar(&o.fanoutRate, "fanout-rate", 500, "paced publishes per second in scenario o")
	flag.DurationVar(&o.fanoutDur, "fanout-duration", 10*time.Second, "paced publishing time in scenario o (whole seconds)")
	flag.IntVar(&o.drainN, "n-drain", 50000, "messages in scenario a")
	flag.IntVar(&o.githubN, "n-github", 20000, "messages in scenario b")
	flag.IntVar(&o.delayedN, "n-delayed", 10000, "messages in each phase of scenario t")
	flag.IntVar(&o.publishN, "n-publish", 200000, "most messages in scenario c")
	flag.DurationVar(&o.publishDur, "publish-duration", 10*time.Second, "longest publishing time in scenario c")
	flag.IntVar(&o.publishers, "publishers", 16, "concurrent publishers in scenario c")
	flag.IntVar(&o.latencyRate, "latency-rate", 1000, "paced publishes per second in scenario d")
	flag.DurationVar(&o.latencyDur, "latency-duration", 10*time.Second, "paced publishing time in scenario d (whole seconds)")
	flag.DurationVar(&o.phaseTimeout, "phase-timeout", 120*time.Second, "longest wait of any phase (publish, drain, receipt)")
	flag.DurationVar(&o.waitQuiet, "wait-quiet", 0, "before starting, wait up to this long for the machine's background load to drop below 0.25 cores (0: don't wait)")
	flag.BoolVar(&o.cpuprofileHerald, "cpuprofile-herald", false, "print how to profile Herald's CPU during a run (nothing is fetched)")
	flag.IntVar(&o.loneRate, "lone-rate", 5, "paced lone publishes per second in scenario l (one publisher)")
	flag.IntVar(&o.loneN, "lone-n", 100, "lone messages in scenario l")
	flag.IntVar(&o.loneBusyRate, "lone-busy-rate", 1000, "paced publishes per second of scenario l's crowd phase")
	flag.IntVar(&o.loneBusyPublishers, "lone-busy-publishers", 16, "concurrent publishers of scenario l's crowd phase")
	flag.IntVar(&o.loneFloorN, "lone-floor-n", 50, "messages per series of scenario l's floor stand-in (a Go HTTP server that POSTs on, with and without one INSERT; lone at -lone-rate and back to back; 0: no stand-in)")
	flag.DurationVar(&o.loneBusyDur, "lone-busy-duration", 10*time.Second, "publishing time of scenario l's crowd phase (whole seconds)")
	flag.IntVar(&o.nodesDrainN, "nodes-drain", 20000, "messages per drain of scenario n (keyless and keyed, one node and two)")
	flag.IntVar(&o.nodesKeys, "nodes-keys", 300, "distinct message keys of scenario n's keyed variants")
	flag.DurationVar(&o.nodesDur, "nodes-duration", 10*time.Second, "publishing time of each throughput phase of scenario n")
	flag.BoolVar(&o.stageTrace, "stage-trace", true, "when scenario l runs, start Herald with HERALD_STAGE_TRACE=true and break the lone messages' latency down by stage")
	flag.Parse()
	return o
}

func main() {
	if dsn := os.Getenv(standInEnv); dsn != "" {
		if err := runStandIn(dsn); err != nil {
			fmt.Fprintln(os.Stderr, "heraldbench stand-in:", err)
			os.Exit(1)
		}
		return
	}
	o := parseFlags()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "heraldbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "heraldbench:", err)
		os.Exit(1)
	}
}

func (o options) validate() error {
	for _, s := range o.selected() {
		if !strings.Contains("abcdefghklnostx", s) || len(s) != 1 {
			return fmt.Errorf("-scenarios: unknown scenario %q (want one of a to h, k, l, n, o, s, t, x)", s)
		}
	}
	if o.drainN < 1 || o.githubN < 1 || o.delayedN < 1 || o.publishN < 100 || o.publishers < 1 || o.latencyRate < 1 || o.latencyDur < time.Second ||
		o.idleDur < time.Second || o.idleGroups < 1 || o.trickleRate < 1 || o.trickleDur < time.Second ||
		o.saturationPublishers < 1 || o.saturationMax < 1 || o.saturationDur <= 0 || o.fanoutGroups < 1 || o.fanoutRate < 1 || o.fanoutDur < time.Second ||
		o.nodesDrainN < 1 || o.nodesKeys < 2 || o.nodesDur < time.Second ||
		o.loneRate < 1 || o.loneN < 1 || o.loneBusyRate < 1 || o.loneBusyPublishers < 1 || o.loneBusyDur < time.Second || o.loneFloorN < 0 {
		return fmt.Errorf("message counts, publishers, groups and rates must be positive, -n-publish ≥ 100, -saturation-duration > 0, " +
			"-latency-duration, -idle-duration, -trickle-duration, -fanout-duration and -lone-busy-duration ≥ 1s")
	}
	return nil
}

func (o options) selected() []string {
	var out []string
	for s := range strings.SplitSeq(o.scenarios, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (o options) has(s string) bool {
	for _, x := range o.selected() {
		if x == s {
			return true
		}
	}
	return false
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
