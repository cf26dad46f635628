// Package config reads Herald's settings from HERALD_* environment variables with
// caarlos0/env; `herald` flags of the same names override them. Every field states
// its unit and default.
package config

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/caarlos0/env/v11"
)

// Config is the whole settings tree.
type Config struct {
	// MySQLDSN is a go-sql-driver DSN for the primary db node. Default
	// root@tcp(127.0.0.1:3306)/herald. parseTime and a utf8mb4 charset are added when
	// missing, and so are I/O timeouts: timeout=5s (connect), readTimeout=30s and
	// writeTimeout=30s, so a stalled database fails a connection instead of holding it.
	MySQLDSN string `env:"MYSQL_DSN" envDefault:"root@tcp(127.0.0.1:3306)/herald"`
	// MySQLMaxConns caps each process's MySQL connections (open and idle). Default 64;
	// the server's max_connections must cover every process's pool.
	MySQLMaxConns int `env:"MYSQL_MAX_CONNS" envDefault:"64"`
	// RedisAddr is host:port of Redis, or several comma-separated: cluster nodes to
	// learn the cluster from (RedisMode cluster) or the sentinels (RedisMode
	// sentinel). Default 127.0.0.1:6379.
	RedisAddr string `env:"REDIS_ADDR" envDefault:"127.0.0.1:6379"`
	// RedisMode is how Redis is deployed: RedisSingle (one server, or a primary
	// behind a stable address), RedisCluster (Redis Cluster; Redis ≥ 7 for sharded
	// pub/sub) or RedisSentinel (a primary and replicas watched by Sentinel).
	// Default single.
	RedisMode string `env:"REDIS_MODE" envDefault:"single"`
	// RedisMasterName is the Sentinel master set's name (RedisMode sentinel only,
	// where it is required). Default empty.
	RedisMasterName string `env:"REDIS_MASTER_NAME"`
	// RedisPassword is Redis AUTH's password (of the data nodes; sentinels are
	// reached without one). Default empty.
	RedisPassword string `env:"REDIS_PASSWORD"`
	// RedisDB is the Redis database number; a cluster has only 0. Default 0.
	RedisDB int `env:"REDIS_DB" envDefault:"0"`
	// Namespace prefixes every Redis key, pub/sub channel and asynq queue name Herald
	// uses, so several installations (or parallel tests) can share one Redis. Default "herald".
	Namespace string `env:"NAMESPACE" envDefault:"herald"`
	// HTTPAddr is the api role's listen address. Default :8080.
	HTTPAddr string `env:"HTTP_ADDR" envDefault:":8080"`
	// MetricsAddr is the separate listener for /metrics. Default 127.0.0.1:9090; empty disables it.
	MetricsAddr string `env:"METRICS_ADDR" envDefault:"127.0.0.1:9090"`
	// JWTSecret signs console and admin JWTs (HS256); at least 32 bytes.
	JWTSecret string `env:"JWT_SECRET"`
	// AdminUser and AdminPassword create the first admin when no user exists.
	AdminUser     string `env:"ADMIN_USER"`
	AdminPassword string `env:"ADMIN_PASSWORD"`
	// BcryptCost is the bcrypt work factor of new password hashes (4 to 31). Default
	// 12 (auth.DefaultBcryptCost); tests lower it.
	BcryptCost int `env:"BCRYPT_COST" envDefault:"12"`
	// AllowPrivateEndpoints permits loopback and private endpoint addresses. Default false.
	AllowPrivateEndpoints bool `env:"ALLOW_PRIVATE_ENDPOINTS" envDefault:"false"`
	// EncryptionKey seals signing secrets at rest with AES-256-GCM: 32 bytes as 64 hex
	// characters or base64. Empty stores them in plaintext (a warning is logged).
	EncryptionKey string `env:"ENCRYPTION_KEY"`
	// EncryptionOldKeys are earlier EncryptionKeys, comma-separated, still used to open
	// values sealed under them while they are resealed under EncryptionKey. Default none.
	EncryptionOldKeys []string `env:"ENCRYPTION_OLD_KEYS"`

	// PublicURL is Herald's public base URL: the `iss` claim of push tokens, whose
	// keys are served at PublicURL + /.well-known/jwks.json. Default http://127.0.0.1:8080.
	PublicURL string `env:"PUBLIC_URL" envDefault:"http://127.0.0.1:8080"`

	// InProcess, where one process runs the dispatcher with the api or the worker
	// (`herald all`), passes notifications, delivery jobs and reports between those
	// roles in memory (bus.InProcess); false sends them through Redis as between
	// separate processes. Default true. Setting it where no two of those roles run
	// together is refused: it would change nothing.
	InProcess *bool `env:"IN_PROCESS"`

	// PublishLanes is how many group-commit flushes the api runs at once per db node,
	// each on its own connection. Default 1, one writer per node: two lanes measured no
	// better on 2 cores (docs/measurements/publish-lanes.md).
	PublishLanes int `env:"PUBLISH_LANES" envDefault:"1"`
	// PublishTimeout is the longest a publish waits for the database, from its first
	// lookup to its commit; past it the api answers 503 with Retry-After (the outcome
	// may be unknown: retry with the same Idempotency-Key). It is also the group-commit
	// flush deadline. Default 10s.
	PublishTimeout time.Duration `env:"PUBLISH_TIMEOUT" envDefault:"10s"`
	// PublishNotifyLinger spaces the api's notifications over Redis at least this far
	// apart (notify.Notifier.Linger, 0–20 ms): a flush this long or longer after the
	// last notification is announced at once, one that follows closer is held until
	// the next flush past that mark takes it along, at most twice this long after the
	// last notification. It does not touch `herald all`'s notifications to its own
	// dispatcher. Default 3ms; 0 announces every flush at once.
	PublishNotifyLinger time.Duration `env:"PUBLISH_NOTIFY_LINGER" envDefault:"3ms"`
	// StageTrace records when each message passes each stage of the delivery path
	// (internal/stagetrace) and serves the marks at /debug/stagetrace on the metrics
	// listener, for the benchmark's latency breakdown. Default false: off, a mark
	// costs one atomic load.
	StageTrace bool `env:"STAGE_TRACE" envDefault:"false"`
	// CookieSecure marks console cookies Secure (sent over HTTPS only). Set it when a
	// TLS-terminating proxy sits in front of the api; without it cookies are Secure
	// only on a direct TLS connection. Default false.
	CookieSecure bool `env:"COOKIE_SECURE" envDefault:"false"`

	Dispatcher  Dispatcher  `envPrefix:"DISPATCHER_"`
	Worker      Worker      `envPrefix:"WORKER_"`
	Maintenance Maintenance `envPrefix:"MAINTENANCE_"`
}

// Maintenance tunes the maintenance role: work that runs once per deployment under
// a lease in MySQL, whichever process holds it (docs/decisions.md).
type Maintenance struct {
	// LeaseDuration is how long a renewal keeps the maintenance lease (database
	// time); a crashed holder's duties resume elsewhere after it. Default 15s.
	LeaseDuration time.Duration `env:"LEASE_DURATION" envDefault:"15s"`
	// RenewInterval is how often the holder renews the lease and others try to take
	// it; well under LeaseDuration. Default 2s.
	RenewInterval time.Duration `env:"RENEW_INTERVAL" envDefault:"2s"`
	// OutboxInterval is how often the dead-letter outbox runs without a wake-up (a
	// dispatcher asks for a run after each dead-letter report). Default 5s.
	OutboxInterval time.Duration `env:"OUTBOX_INTERVAL" envDefault:"5s"`
	// LagInterval is how often every group's lag is sampled into the per-minute
	// rollups. Default 20s.
	LagInterval time.Duration `env:"LAG_INTERVAL" envDefault:"20s"`
	// AttemptRetention is how long delivery attempts are kept (daily partitions,
	// checked hourly). Default 168h.
	AttemptRetention time.Duration `env:"ATTEMPT_RETENTION" envDefault:"168h"`
	// RetentionInterval is how often topic retention, dead-letter expiry and the purge
	// of deleted groups' rows run; a run that leaves work runs again at the next
	// lease renewal. Default 1m.
	RetentionInterval time.Duration `env:"RETENTION_INTERVAL" envDefault:"1m"`
	// RetentionChunk is how many rows one pruning DELETE removes at most. Default 1000.
	RetentionChunk int `env:"RETENTION_CHUNK" envDefault:"1000"`
	// RetentionPause is the wait between two pruning DELETEs, so publishes keep
	// their latency: 1,000 rows per 200 ms prune at most ≈5,000 rows/s, five times
	// a 1,000 msg/s publish rate (docs/decisions.md). Default 200ms.
	RetentionPause time.Duration `env:"RETENTION_PAUSE" envDefault:"200ms"`
	// RetentionBudget bounds one retention run's time, so lease renewals and the
	// outbox are not held up; the rest waits for the next run. Default 1s.
	RetentionBudget time.Duration `env:"RETENTION_BUDGET" envDefault:"1s"`
	// HygieneInterval is how often Redis keys of dead dispatchers and deleted groups
	// are removed (report streams, fence hashes). Default 1m.
	HygieneInterval time.Duration `env:"HYGIENE_INTERVAL" envDefault:"1m"`
	// DeletedGroupGrace is how long a deleted group's dead letters and attempt log
	// are kept (read by the api role, which deletes groups). Default 168h.
	DeletedGroupGrace time.Duration `env:"DELETED_GROUP_GRACE" envDefault:"168h"`
}

// Dispatcher tunes the dispatcher role: leases, reads, jobs, commits.
type Dispatcher struct {
	// PollInterval is the fallback MAX(id) poll per db node while the dispatcher has
	// work (jobs in flight, messages read and not sent, open holes). Default 250ms.
	PollInterval time.Duration `env:"POLL_INTERVAL" envDefault:"250ms"`
	// IdlePollInterval is the fallback poll while the dispatcher has no work at all:
	// publishes wake it by notification, so this bounds only what a lost
	// notification costs an idle dispatcher. Default 1s.
	IdlePollInterval time.Duration `env:"IDLE_POLL_INTERVAL" envDefault:"1s"`
	// RebalanceInterval is how often a dispatcher re-reads every group, cursor and
	// live dispatcher whatever it was told (the sweep). Group changes, joins and
	// leaves are applied at once on their notifications and a crashed peer when its
	// lease ends; the sweep bounds what a lost notification costs. Default 30s.
	RebalanceInterval time.Duration `env:"REBALANCE_INTERVAL" envDefault:"30s"`
	// GapTimeout is how long a hole stays open before it is taken as a rollback. Default 30s.
	GapTimeout time.Duration `env:"GAP_TIMEOUT" envDefault:"30s"`
	// JobSize caps messages per delivery job. Default 100.
	JobSize int `env:"JOB_SIZE" envDefault:"100"`
	// JobMaxBytes caps body bytes per delivery job. Default 4 MiB.
	JobMaxBytes int `env:"JOB_MAX_BYTES" envDefault:"4194304"`
	// MaxSpan caps offsets between a cursor's commit and its read position, holes
	// excluded (RocketMQ's consumeConcurrentlyMaxSpan). Default 2000.
	MaxSpan int `env:"MAX_SPAN" envDefault:"2000"`
	// MaxJobsInFlight caps delivery jobs in flight per cursor. Default 16.
	MaxJobsInFlight int `env:"MAX_JOBS_IN_FLIGHT" envDefault:"16"`
	// JobDeadlineBase is the fixed part of a job's deadline, beyond its POSTs;
	// POST rounds × timeout_ms and the time the group's rate needs are added. Default 40s.
	JobDeadlineBase time.Duration `env:"JOB_DEADLINE_BASE" envDefault:"40s"`
	// ReturnBackoff is the first delay before a returned message is sent again; it doubles
	// per return up to 30 s. Default 1s.
	ReturnBackoff time.Duration `env:"RETURN_BACKOFF" envDefault:"1s"`
	// CommitInterval is the longest time between cursor commits. Default 1s.
	CommitInterval time.Duration `env:"COMMIT_INTERVAL" envDefault:"1s"`
	// ReportCommitDelay is how soon cursors are committed after a report moved them,
	// and so at most how often reports cause commits (one transaction for every changed
	// cursor). Reports stay in the dispatcher's Redis stream until a commit covers
	// them, so it no longer bounds what a killed dispatcher's successor sends again;
	// it bounds how long covered entries wait to be trimmed. Default 100ms.
	ReportCommitDelay time.Duration `env:"REPORT_COMMIT_DELAY" envDefault:"100ms"`
	// ReportGather is how long the dispatcher waits after a read of its report stream
	// before it reads again, so that one XREAD takes what several workers' sends
	// added; a dispatcher owning an ordered group does not wait (the group's next
	// message of a key or queue waits for a report). Between 0 and 20ms. Default 5ms.
	ReportGather time.Duration `env:"REPORT_GATHER" envDefault:"5ms"`
	// HeartbeatInterval is how often the dispatcher renews its lease (on its own
	// goroutine); also the first delay before a claim another dispatcher still
	// holds is tried again. Default 1s.
	HeartbeatInterval time.Duration `env:"HEARTBEAT_INTERVAL" envDefault:"1s"`
	// LeaseDuration is how long a heartbeat keeps the lease, in database time
	// (lease_until = NOW(3) + this). Survivors re-read the live set when the first
	// peer lease they saw ends, so a killed dispatcher's groups are claimed about
	// LeaseDuration after its last heartbeat (3 s by default); it must be ≥ 2 ×
	// HeartbeatInterval (Validate), and 3 × leaves room for a slow heartbeat.
	// Default 3s.
	LeaseDuration time.Duration `env:"LEASE_DURATION" envDefault:"3s"`
	// DisableAfter auto-pauses (disables) a group that failed without a success for
	// this long (throttle-only time counts). Default 72h.
	DisableAfter time.Duration `env:"DISABLE_AFTER" envDefault:"72h"`
	// MaxGenerations is how many times a job without reports is re-dispatched before its
	// messages are backed off as no_report. Default 5.
	MaxGenerations int `env:"MAX_GENERATIONS" envDefault:"5"`
}

// Worker tunes the worker role: concurrency, asynq polling, shutdown, heartbeats.
type Worker struct {
	// Concurrency bounds what one worker runs at once: its running delivery jobs,
	// and the POSTs they have open, are each at most Concurrency, whether a job came
	// in-process, pushed or through asynq (one semaphore, bus.Slots). Default 64.
	Concurrency int `env:"CONCURRENCY" envDefault:"64"`
	// TaskCheckInterval is asynq's idle poll for new jobs, the fallback for a lost
	// wake-up: dispatchers PUBLISH on delivery.Keys.JobsChannel after enqueueing and
	// an idle worker looks at once. Each poll costs 3 Redis commands. Default 1s.
	TaskCheckInterval time.Duration `env:"TASK_CHECK_INTERVAL" envDefault:"1s"`
	// DelayedTaskCheckInterval is how often asynq moves due tasks from its scheduled
	// and retry sets back to the asynq queue (4 Redis commands each time). Herald
	// schedules none; only a panicking handler's task lands there, to run again after
	// asynq's retry delay (≥ 15 s) plus up to this interval. Default 5s.
	DelayedTaskCheckInterval time.Duration `env:"DELAYED_TASK_CHECK_INTERVAL" envDefault:"5s"`
	// ShutdownTimeout is asynq's backstop on shutdown: a job still running after it is
	// re-queued whole. Workers stop starting POSTs at once and return within the longest
	// POST in flight, so it must exceed the longest timeout_ms (30 s). Default 35s.
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"35s"`
	// ResponseCapBytes caps how much of a response body is read. Default 64 KiB.
	ResponseCapBytes int64 `env:"RESPONSE_CAP_BYTES" envDefault:"65536"`
	// HeartbeatTTL is how long a running job's heartbeat key lives without a refresh
	// (refreshed every TTL/3). Default 10s.
	HeartbeatTTL time.Duration `env:"HEARTBEAT_TTL" envDefault:"10s"`
	// ProgressInterval is the longest time between a running job's progress reports
	// (the first comes up to 100 ms later: a job's heartbeat starts after 100 ms). Default 1s.
	ProgressInterval time.Duration `env:"PROGRESS_INTERVAL" envDefault:"1s"`
	// ReportLinger is how long a report of a job of an unordered group waits for
	// other reports to the same dispatcher before they go as one XADD to its report
	// stream (an ordered group's report, whose next message waits for it, goes at
	// once; reports arriving while a send is under way always share the next one).
	// Between 0 and 20ms. Default 5ms.
	ReportLinger time.Duration `env:"REPORT_LINGER" envDefault:"5ms"`
	// PushJobs makes the worker take jobs pushed by dispatchers over Redis pub/sub
	// (its own channel, announced in delivery.Keys.Workers; internal/bus/push_codec.go)
	// besides asynq's. Off, it takes jobs from asynq alone. It has no effect in a
	// process that runs the dispatcher too (`herald all`: bus.InProcess). Default true.
	PushJobs bool `env:"PUSH_JOBS" envDefault:"true"`
	// Issuer is the `iss` claim of push tokens; the app sets it from HERALD_PUBLIC_URL
	// (it has no variable of its own).
	Issuer string
}

// Load reads the environment (HERALD_ prefix) into a Config.
func Load() (Config, error) {
	var c Config
	if err := env.ParseWithOptions(&c, env.Options{Prefix: "HERALD_"}); err != nil {
		return c, fmt.Errorf("read HERALD_* settings: %w", err)
	}
	// envDefault also fills a variable set to the empty string; for the metrics
	// listener, empty means none.
	if v, set := os.LookupEnv("HERALD_METRICS_ADDR"); set && v == "" {
		c.MetricsAddr = ""
	}
	return c, nil
}

// Validate checks settings that every role needs, with their bounds: durations
// (intervals, timeouts, TTLs) > 0, counts and byte sizes ≥ 1, the dispatcher lease
// at least twice its heartbeat, the maintenance renewal below its lease, attempt
// retention at least 24 h, bcrypt cost 4 to 31. Every violation is reported, joined.
// Warnings lists what is allowed but probably wrong.
func (c Config) Validate() error {
	var errs []error
	if c.MySQLDSN == "" {
		errs = append(errs, errors.New("HERALD_MYSQL_DSN is empty"))
	}
	if err := c.validateRedis(); err != nil {
		errs = append(errs, err)
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("HERALD_NAMESPACE is empty"))
	}
	if c.Dispatcher.JobSize < 1 || c.Dispatcher.MaxSpan < c.Dispatcher.JobSize {
		errs = append(errs, errors.New("HERALD_DISPATCHER_JOB_SIZE must be ≥1 and ≤ HERALD_DISPATCHER_MAX_SPAN"))
	}
	if d := c.Dispatcher; d.HeartbeatInterval <= 0 || d.LeaseDuration < 2*d.HeartbeatInterval {
		errs = append(errs, errors.New("HERALD_DISPATCHER_LEASE_DURATION must be at least twice HERALD_DISPATCHER_HEARTBEAT_INTERVAL"))
	}
	if c.Maintenance.RenewInterval <= 0 || c.Maintenance.LeaseDuration <= c.Maintenance.RenewInterval {
		errs = append(errs, errors.New("HERALD_MAINTENANCE_RENEW_INTERVAL must be >0 and < HERALD_MAINTENANCE_LEASE_DURATION"))
	}
	if c.BcryptCost < 4 || c.BcryptCost > 31 {
		errs = append(errs, errors.New("HERALD_BCRYPT_COST must be between 4 and 31"))
	}
	if c.Worker.Concurrency < 1 {
		errs = append(errs, errors.New("HERALD_WORKER_CONCURRENCY must be ≥1"))
	}
	for _, p := range []struct {
		name string
		d    time.Duration
	}{
		{"HERALD_DISPATCHER_POLL_INTERVAL", c.Dispatcher.PollInterval},
		{"HERALD_DISPATCHER_IDLE_POLL_INTERVAL", c.Dispatcher.IdlePollInterval},
		{"HERALD_DISPATCHER_REBALANCE_INTERVAL", c.Dispatcher.RebalanceInterval},
		{"HERALD_DISPATCHER_GAP_TIMEOUT", c.Dispatcher.GapTimeout},
		{"HERALD_DISPATCHER_JOB_DEADLINE_BASE", c.Dispatcher.JobDeadlineBase},
		{"HERALD_DISPATCHER_RETURN_BACKOFF", c.Dispatcher.ReturnBackoff},
		{"HERALD_DISPATCHER_COMMIT_INTERVAL", c.Dispatcher.CommitInterval},
		{"HERALD_DISPATCHER_DISABLE_AFTER", c.Dispatcher.DisableAfter},
		{"HERALD_WORKER_TASK_CHECK_INTERVAL", c.Worker.TaskCheckInterval},
		{"HERALD_WORKER_SHUTDOWN_TIMEOUT", c.Worker.ShutdownTimeout},
		{"HERALD_WORKER_HEARTBEAT_TTL", c.Worker.HeartbeatTTL},
		{"HERALD_WORKER_PROGRESS_INTERVAL", c.Worker.ProgressInterval},
		{"HERALD_MAINTENANCE_OUTBOX_INTERVAL", c.Maintenance.OutboxInterval},
		{"HERALD_MAINTENANCE_LAG_INTERVAL", c.Maintenance.LagInterval},
	} {
		if p.d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be > 0, not %s", p.name, p.d))
		}
	}
	for _, p := range []struct {
		name string
		n    int64
	}{
		{"HERALD_PUBLISH_LANES", int64(c.PublishLanes)},
		{"HERALD_DISPATCHER_JOB_MAX_BYTES", int64(c.Dispatcher.JobMaxBytes)},
		{"HERALD_DISPATCHER_MAX_JOBS_IN_FLIGHT", int64(c.Dispatcher.MaxJobsInFlight)},
		{"HERALD_DISPATCHER_MAX_GENERATIONS", int64(c.Dispatcher.MaxGenerations)},
		{"HERALD_WORKER_RESPONSE_CAP_BYTES", c.Worker.ResponseCapBytes},
	} {
		if p.n < 1 {
			errs = append(errs, fmt.Errorf("%s must be ≥1, not %d", p.name, p.n))
		}
	}
	for _, p := range []struct {
		name string
		d    time.Duration
	}{
		{"HERALD_WORKER_REPORT_LINGER", c.Worker.ReportLinger},
		{"HERALD_DISPATCHER_REPORT_GATHER", c.Dispatcher.ReportGather},
		{"HERALD_PUBLISH_NOTIFY_LINGER", c.PublishNotifyLinger},
	} {
		if p.d < 0 || p.d > 20*time.Millisecond {
			errs = append(errs, fmt.Errorf("%s must be between 0 and 20ms, not %s", p.name, p.d))
		}
	}
	if c.Maintenance.AttemptRetention < 24*time.Hour {
		errs = append(errs, errors.New("HERALD_MAINTENANCE_ATTEMPT_RETENTION must be at least 24h (attempts are kept in daily partitions)"))
	}
	return errors.Join(errs...)
}

// ValidateAPI checks settings the api role needs: a JWT secret of at least 32 bytes.
func (c Config) ValidateAPI() error {
	if len(c.JWTSecret) < 32 {
		return errors.New("HERALD_JWT_SECRET must be at least 32 bytes")
	}
	return nil
}
