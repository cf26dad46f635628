// Command herald is Herald's one binary. Subcommands:
//
//	herald all [--demo]       every role in one process (make run uses --demo)
//	herald api | dispatcher | worker | maintenance
//	herald migrate up|down|status
//	herald user create --username U --password P [--role admin|operator|viewer]
//	herald apikey create --name N --topics 'orders,orders.*'
//	herald version
//
// Settings come from HERALD_* environment variables; the flags --mysql-dsn,
// --redis-addr, --http-addr, --metrics-addr and --namespace override them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/config"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := run(log, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "herald:", err)
		os.Exit(1)
	}
}

const usage = `usage: herald <all|api|dispatcher|worker|maintenance|migrate|user|apikey|version> [flags]`

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
		return errors.New(usage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "version":
		fmt.Println("herald", version)
		return nil
	case "all", "api", "dispatcher", "worker", "maintenance":
		return runRoles(ctx, log, cmd, rest)
	case "migrate":
		return runMigrate(ctx, rest)
	case "user":
		return runUser(ctx, rest)
	case "apikey":
		return runAPIKey(ctx, rest)
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

func runRoles(ctx context.Context, log *slog.Logger, cmd string, args []string) error {
	fs, vals := newFlags(cmd)
	demoMode := fs.Bool("demo", false, "set up and run the demo (make run): admin, topic, receiver, group, API key")
	if err := fs.Parse(args); err != nil {
		return err
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
	a, err := app.Open(ctx, cfg, roles, log)
	if err != nil {
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
