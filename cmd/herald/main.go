// Command herald is Herald's one binary. Subcommands:
//
//	herald all [--demo]       every role in one process (make run uses --demo)
//	herald api | dispatcher | worker | maintenance
//	herald migrate up|down|status
//	herald user create --username U --password P [--role admin|operator|viewer]
//	herald apikey create --name N --topics 'orders,orders.*'
//	herald version
//	herald login | refresh | message … | topic … | group … | dead-letters … | key … | node … | users … |
//	       audit-log … | push-key … | server …   (the control plane over HTTP)
//
// Settings come from HERALD_* environment variables; the flags --mysql-dsn,
// --redis-addr, --http-addr, --metrics-addr and --namespace override them. The
// HTTP commands (cli*.go) are built on the client package; their exit codes are
// the exit* constants.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/internal/config"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	err := run(log, os.Args[1:])
	if err != nil && !errors.Is(err, errHelpShown) {
		fmt.Fprintln(os.Stderr, "herald:", err)
	}
	os.Exit(exitCode(err))
}

// globalFlags are the flags every command takes; each overrides one HERALD_*
// setting on the loaded Config (the environment itself is left alone).
var globalFlags = []struct {
	name, env string
	set       func(*config.Config, string)
}{
	{"mysql-dsn", "HERALD_MYSQL_DSN", func(c *config.Config, v string) { c.MySQLDSN = v }},
	{"redis-addr", "HERALD_REDIS_ADDR", func(c *config.Config, v string) { c.RedisAddr = v }},
	{"http-addr", "HERALD_HTTP_ADDR", func(c *config.Config, v string) { c.HTTPAddr = v }},
	{"metrics-addr", "HERALD_METRICS_ADDR", func(c *config.Config, v string) { c.MetricsAddr = v }},
	{"namespace", "HERALD_NAMESPACE", func(c *config.Config, v string) { c.Namespace = v }},
}

// newFlags returns a flag set with the global flags; vals holds their values by flag name.
func newFlags(name string) (fs *flag.FlagSet, vals map[string]*string) {
	fs = flag.NewFlagSet(name, flag.ContinueOnError)
	vals = map[string]*string{}
	for _, f := range globalFlags {
		vals[f.name] = fs.String(f.name, "", "overrides "+f.env)
	}
	return fs, vals
}

// loadConfig reads the HERALD_* environment and applies the global flags given.
func loadConfig(vals map[string]*string) (config.Config, error) {
	cfg, err := config.Load()
	if err != nil {
		return cfg, err
	}
	for _, f := range globalFlags {
		if v := vals[f.name]; v != nil && *v != "" {
			f.set(&cfg, *v)
		}
	}
	return cfg, nil
}

func run(log *slog.Logger, args []string) error {
	if len(args) == 0 {
		return usagef("%s", topUsage())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if httpCommand(firstWord(args)) {
		args = hoistSessionFlags(args)
	}
	cmd, rest := args[0], args[1:]
	if _, ok := cliResources[cmd]; ok {
		return runResource(ctx, os.Stdout, cmd, rest)
	}
	switch {
	case isHelp(cmd) && len(rest) == 0:
		fmt.Print(topUsage())
		return errHelpShown
	case isHelp(cmd):
		if _, ok := cliResources[rest[0]]; ok {
			fmt.Print(resourceUsage(rest[0]))
			return errHelpShown
		}
		return run(log, append(rest[:1:1], "--help"))
	}
	switch cmd {
	case "login":
		return runCLICommand(ctx, os.Stdout, loginCommand, rest)
	case "refresh":
		return runCLICommand(ctx, os.Stdout, refreshCommand, rest)
	}
	for _, lc := range localCommands {
		if w, _, _ := strings.Cut(lc.name, " "); w == cmd {
			return lc.run(ctx, log, cmd, rest)
		}
	}
	return usagef("unknown command %q; run 'herald --help'", cmd)
}

// localCommand is a command that runs Herald or works on its database directly;
// name is its whole name ("user create"), run gets the words after the first.
type localCommand struct {
	name string
	run  func(ctx context.Context, log *slog.Logger, cmd string, rest []string) error
}

// localCommands are the commands that do not go over HTTP, in --help's order.
var localCommands = []localCommand{
	{"all", runRoles}, {"api", runRoles}, {"dispatcher", runRoles}, {"worker", runRoles}, {"maintenance", runRoles},
	{"migrate", func(ctx context.Context, _ *slog.Logger, _ string, rest []string) error { return runMigrate(ctx, rest) }},
	{"user create", func(ctx context.Context, _ *slog.Logger, _ string, rest []string) error { return runUser(ctx, rest) }},
	{"apikey create", func(ctx context.Context, _ *slog.Logger, _ string, rest []string) error { return runAPIKey(ctx, rest) }},
	{"version", func(context.Context, *slog.Logger, string, []string) error {
		fmt.Println("herald", version)
		return nil
	}},
}

// roleSummaries describe each role in its --help.
var roleSummaries = map[string]string{
	"all":         "Run every role in one process.",
	"api":         "Run the REST API and the console (HERALD_HTTP_ADDR).",
	"dispatcher":  "Run a dispatcher: cursors, leases, delivery jobs, reports and commits.",
	"worker":      "Run a worker: POSTs delivery jobs to endpoints.",
	"maintenance": "Run maintenance (one leader at a time): dead-letter outbox, lag samples, pruning, partitions.",
}

func runRoles(ctx context.Context, log *slog.Logger, cmd string, args []string) error {
	fs, vals := newFlags(cmd)
	demoMode := new(bool)
	if cmd == "all" {
		demoMode = fs.Bool("demo", false, "set up and run the demo (make run): admin, topic, receiver, group, API key")
	}
	if err := parseFlags(fs, args, "usage: herald "+cmd+" [flags]\n\n"+roleSummaries[cmd]+
		" Settings come from HERALD_* variables (README, Roles and settings); these flags override them."); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("herald %s takes no arguments, not %q", cmd, fs.Arg(0))
	}
	if *demoMode {
		if err := prepareDemoEnv(); err != nil {
			return err
		}
	}
	cfg, err := loadConfig(vals)
	if err != nil {
		return err
	}
	for _, name := range config.UnknownVariables(os.Environ()) {
		log.Warn("unknown setting ignored; check its spelling against README's table", "variable", name)
	}
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	roles := app.All
	switch cmd {
	case "api":
		roles = app.Roles{API: true}
	case "dispatcher":
		roles = app.Roles{Dispatcher: true}
	case "worker":
		roles = app.Roles{Worker: true}
	case "maintenance":
		roles = app.Roles{Maintenance: true}
	}
	if inert := config.RedisWorkerVariables(os.Environ()); len(inert) > 0 && roles.InProcessBus(cfg) {
		return fmt.Errorf("%s tune a worker that takes its jobs over Redis; this process's worker takes them in memory from its own dispatcher (HERALD_IN_PROCESS): unset them, or set HERALD_IN_PROCESS=false", strings.Join(inert, ", "))
	}
	a, err := app.Open(ctx, cfg, roles, log)
	if err != nil {
		if ctx.Err() != nil { // a stop signal while starting: nothing ran, nothing to drain
			log.Info("herald stopped while starting", "roles", cmd, "err", err)
			return nil
		}
		return err
	}
	defer a.Close()
	if roles.API {
		if err := bootstrapAdmin(ctx, a); err != nil {
			return err
		}
	}
	if *demoMode {
		return runDemo(ctx, log, a)
	}
	log.Info("herald started", "roles", cmd, "http", cfg.HTTPAddr, "version", version)
	err = a.Run(ctx, nil)
	log.Info("herald stopped", "roles", cmd, "err", err)
	return err
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseFlags parses a database or role command's flags: --help prints head and
// the flags to stdout (errHelpShown), a bad flag is a usage error.
func parseFlags(fs *flag.FlagSet, args []string, head string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if err == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString(head + "\n\nflags:\n")
	fs.SetOutput(&b)
	fs.PrintDefaults()
	if errors.Is(err, flag.ErrHelp) {
		fmt.Print(b.String())
		return errHelpShown
	}
	return usagef("%v\n%s", err, b.String())
}
