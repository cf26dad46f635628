// Package app wires Herald's roles (api, dispatcher, worker, maintenance) from a
// Config, for the herald binary and for in-process black-box tests.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/redisconn"
	"github.com/heraldhq/herald/internal/secrets"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/stagetrace"
	"github.com/heraldhq/herald/maintenance"
	"github.com/heraldhq/herald/models/store"
	"github.com/heraldhq/herald/web"
	"github.com/heraldhq/herald/worker"
)

// Roles selects what a process runs. Maintenance may run in any number of
// processes: they share one lease and only its holder works.
type Roles struct {
	API, Dispatcher, Worker, Maintenance bool
}

// All runs every role in one process (`herald all`, `make run`).
var All = Roles{API: true, Dispatcher: true, Worker: true, Maintenance: true}

// InProcessBus reports whether these roles, under cfg, pass delivery jobs in memory
// (bus.InProcess): the dispatcher and the worker share the process and
// HERALD_IN_PROCESS is not false. The worker then reads none of the settings of a
// worker that takes its jobs over Redis (config.RedisWorkerVariables).
func (r Roles) InProcessBus(cfg config.Config) bool {
	return r.Dispatcher && r.Worker && (cfg.InProcess == nil || *cfg.InProcess)
}

// App is a set of roles sharing one MySQL pool and one Redis client.
type App struct {
	Cfg      config.Config
	Store    *store.Store
	Redis    redis.UniversalClient
	RedisOpt asynq.RedisConnOpt
	// Control is the process's one application layer, built whatever the roles: the
	// api and the console serve it, the CLI's database commands and the demo call it.
	Control    *control.Control
	API        *api.Server
	Writer     *groupcommit.Writer
	Dispatcher *dispatcher.Dispatcher
	Worker     *worker.Worker
	// Maintenance is the maintenance role (nil unless Roles.Maintenance).
	Maintenance *maintenance.Maintainer
	// notifier announces the api's flushes; it is closed once the writer stopped,
	// so no held notification is left behind.
	notifier *notify.Notifier
	log      *slog.Logger
}

// Open connects to MySQL and Redis, refuses to continue while migrations are pending
// (models.ErrMigrationsPending) and builds Control and the selected roles (none: a
// CLI process that only calls Control).
func Open(ctx context.Context, cfg config.Config, roles Roles, log *slog.Logger) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if roles.API {
		if err := cfg.ValidateAPI(); err != nil {
			return nil, err
		}
	}
	st, err := store.Open(ctx, cfg.MySQLDSN)
	if err != nil {
		return nil, err
	}
	st.SetPoolSize(cfg.MySQLMaxConns)
	if err := st.CheckMigrations(ctx); err != nil {
		st.Close()
		return nil, err
	}
	if err := useKeyring(ctx, cfg, st, roles, log); err != nil {
		st.Close()
		return nil, err
	}
	rdb, ropt := redisconn.Open(cfg)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		st.Close()
		return nil, fmt.Errorf("connect to redis (%s) at %s: %w", cfg.RedisMode, cfg.RedisAddr, err)
	}
	a := &App{Cfg: cfg, Store: st, Redis: rdb, RedisOpt: ropt, log: log}
	if cfg.StageTrace {
		stagetrace.Enable()
	}
	inProcess := roles.Dispatcher && (roles.API || roles.Worker)
	if cfg.InProcess != nil && !inProcess {
		rdb.Close()
		st.Close()
		return nil, errors.New("HERALD_IN_PROCESS applies only where one process runs the dispatcher with the api or the worker (herald all); unset it")
	}
	inProcess = inProcess && (cfg.InProcess == nil || *cfg.InProcess)
	guard := ssrf.Guard{AllowPrivate: cfg.AllowPrivateEndpoints}
	keys := delivery.Keys{Namespace: cfg.Namespace, HashTags: cfg.RedisMode == config.RedisCluster}
	fail := func(err error) (*App, error) {
		rdb.Close()
		st.Close()
		return nil, err
	}
	// The delivery bus, chosen once: in memory where this process runs the
	// dispatcher and the worker together, else over Redis.
	var jobs bus.Jobs
	var source bus.Source
	if roles.InProcessBus(cfg) {
		ip := bus.NewInProcess()
		jobs, source = ip, ip
	} else {
		if roles.Dispatcher {
			jobs = bus.NewRedisJobs(rdb, ropt, keys, log, nil)
		}
		if roles.Worker {
			source = bus.NewRedisSource(cfg.Worker, rdb, ropt, keys, log)
		}
	}
	if roles.Dispatcher {
		if a.Dispatcher, err = dispatcher.New(dispatcher.Deps{Config: cfg.Dispatcher, Keys: keys, Store: st, Redis: rdb, Jobs: jobs, Log: log}); err != nil {
			return fail(err)
		}
	}
	// In `herald all` the api hands its flushes to this process's dispatcher first.
	var local notify.LocalSink
	if inProcess && roles.API {
		local = a.Dispatcher.Notified
	}
	notifier := notify.NewLocal(rdb, keys, local).Linger(cfg.PublishNotifyLinger, log)
	a.notifier = notifier
	ctl, err := control.New(control.Config{Store: st, Redis: rdb, Keys: keys, Notifier: notifier, Guard: guard, Log: log,
		JWTSecret: cfg.JWTSecret, BcryptCost: cfg.BcryptCost, DeletedGroupGrace: cfg.Maintenance.DeletedGroupGrace, PublicURL: cfg.PublicURL})
	if err != nil {
		return fail(err)
	}
	a.Control = ctl
	if roles.API {
		if a.Writer, err = groupcommit.New(groupcommit.Config{Store: st, Notifier: notifier, Log: log, Lanes: cfg.PublishLanes, FlushTimeout: cfg.PublishTimeout}); err != nil {
			return fail(err)
		}
		a.API = api.New(api.Options{PublishTimeout: cfg.PublishTimeout}, ctl, rdb, a.Writer, log)
		a.API.Mount(web.New(web.Config{Control: ctl, Log: log, CookieSecure: cfg.CookieSecure}).Routes)
	}
	if roles.Worker {
		cfg.Worker.Issuer = cfg.PublicURL
		if a.Worker, err = worker.New(worker.Deps{Config: cfg.Worker, Keys: keys, Store: st.Sides(), Redis: rdb, Source: source, Guard: guard, Log: log}); err != nil {
			return fail(err)
		}
	}
	if roles.Maintenance {
		a.Maintenance = maintenance.New(cfg.Maintenance, keys, st.Sides(), rdb, log)
	}
	return a, nil
}

// useKeyring makes the store seal signing secrets with HERALD_ENCRYPTION_KEY; the api
// role also reseals rows written in plaintext or under an old key.
func useKeyring(ctx context.Context, cfg config.Config, st *store.Store, roles Roles, log *slog.Logger) error {
	kr, err := secrets.ParseKeyring(cfg.EncryptionKey, cfg.EncryptionOldKeys)
	if err != nil {
		return fmt.Errorf("HERALD_ENCRYPTION_KEY: %w", err)
	}
	st.UseKeyring(kr)
	if !roles.API {
		return nil
	}
	if !kr.Enabled() {
		log.Warn("HERALD_ENCRYPTION_KEY is not set: signing secrets are stored in plaintext")
		return nil
	}
	n, err := st.GroupSecretsReseal(ctx)
	if err != nil {
		if errors.Is(err, secrets.ErrUnknownKey) {
			return fmt.Errorf("reseal signing secrets: %w: this database's secrets were sealed with another HERALD_ENCRYPTION_KEY; "+
				"set that key (a retired one goes in HERALD_ENCRYPTION_OLD_KEYS), or for `make run` copy the .herald/demo.env of the checkout "+
				"that created the database, or point HERALD_MYSQL_DSN at a new database", err)
		}
		return fmt.Errorf("reseal signing secrets: %w", err)
	}
	if n > 0 {
		log.Info("signing secrets resealed under the current encryption key", "groups", n, "key_id", kr.PrimaryID())
	}
	return nil
}

// Run runs the roles until ctx ends. apiLn is the api's listener (nil: listen on
// Cfg.HTTPAddr). Shutdown order, once ctx ends (the roles stop side by side, each in
// its own order):
//   - api: the server stops accepting and drains in-flight requests (up to 10 s);
//     only then does the group-commit writer stop, so a publish still being read
//     is flushed, never refused with groupcommit.ErrClosed; then the notifications
//     it still held go out;
//   - worker: starts no new POST, finishes running ones and reports the rest as
//     returned;
//   - dispatcher: commits cursors and releases its leases;
//   - maintenance: finishes its current duty and releases its lease;
//   - the db node prober stops between probes.
//
// Run returns when every role has stopped; the first role error stops the others.
func (a *App) Run(ctx context.Context, apiLn net.Listener) error {
	eg, ctx := errgroup.WithContext(ctx)
	if a.API != nil {
		if apiLn == nil {
			ln, err := net.Listen("tcp", a.Cfg.HTTPAddr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", a.Cfg.HTTPAddr, err)
			}
			apiLn = ln
		}
		// The writer outlives ctx until Serve has drained: requests in flight still submit.
		writerCtx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
		eg.Go(func() error {
			defer a.notifier.Close()
			return a.Writer.Run(writerCtx)
		})
		eg.Go(func() error { defer stopWriter(); return a.API.Serve(ctx, apiLn) })
	}
	if a.Worker != nil {
		eg.Go(func() error { return a.Worker.Run(ctx) })
	}
	if a.Dispatcher != nil {
		eg.Go(func() error { return a.Dispatcher.Run(ctx) })
	}
	if a.Maintenance != nil {
		eg.Go(func() error { return a.Maintenance.Run(ctx) })
	}
	if a.Cfg.MetricsAddr != "" {
		eg.Go(func() error { return metrics.Serve(ctx, a.Cfg.MetricsAddr) })
	}
	// Every role reads node health (keyless placement, views, node events): one
	// prober per process marks db nodes down and up again.
	eg.Go(func() error { return a.Store.Nodes().NodeHealthRun(ctx) })
	return eg.Wait()
}

// Close releases MySQL and Redis connections.
func (a *App) Close() {
	a.Redis.Close()
	a.Store.Close()
}

// MigrationStatus is the schema's state: the applied version, the latest one this
// binary embeds, and whether a migration stopped halfway (dirty).
type MigrationStatus = store.MigrationStatus

// Migrate applies (step "up"), undoes one (step "down") or only reads ("status") the
// schema migrations of the database at dsn and returns the resulting status.
func Migrate(ctx context.Context, dsn, step string) (MigrationStatus, error) {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return MigrationStatus{}, err
	}
	defer st.Close()
	switch step {
	case "up":
		err = st.MigrateUp(ctx)
	case "down":
		err = st.MigrateDown(ctx)
	case "status":
	default:
		return MigrationStatus{}, fmt.Errorf("unknown migration step %q (up, down or status)", step)
	}
	if err != nil {
		return MigrationStatus{}, err
	}
	return st.MigrationStatus(ctx)
}
