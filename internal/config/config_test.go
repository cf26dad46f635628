package config

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUnknownVariables: a misspelt HERALD_* name is reported; settings, the CLI's
// and scripts' names, HERALD_TEST_* and HERALD_DEMO_* and other variables are not.
func TestUnknownVariables(t *testing.T) {
	t.Parallel()
	got := UnknownVariables([]string{"HERALD_WORKER_CONCURENCY=3", "HERALD_WORKER_CONCURRENCY=3", "HERALD_MYSQL_DSN=x",
		"HERALD_DISPATCHER_LEASE_DURATION=3s", "HERALD_TOKEN=t", "HERALD_URL=u", "HERALD_TEST_MYSQL_DSN=x", "HERALD_DEMO_RECEIVER_ADDR=:1",
		"PATH=/bin", "HERALD_HTTP_ADR=:1", "HERALD_HTTP_ADR=:2"})
	require.Equal(t, []string{"HERALD_HTTP_ADR", "HERALD_WORKER_CONCURENCY"}, got)
	vars := Variables()
	require.Contains(t, vars, "HERALD_MAINTENANCE_ATTEMPT_RETENTION")
	require.Contains(t, vars, "HERALD_ENCRYPTION_OLD_KEYS")
}

// TestValidateBounds: the defaults pass; each documented bound is enforced and
// every violation is reported at once.
func TestValidateBounds(t *testing.T) {
	t.Parallel()
	base, err := Load()
	require.NoError(t, err)
	require.NoError(t, base.Validate())
	require.Empty(t, base.Warnings(), "the defaults are sound")
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"poll interval", func(c *Config) { c.Dispatcher.PollInterval = 0 }, "HERALD_DISPATCHER_POLL_INTERVAL must be > 0"},
		{"task check interval", func(c *Config) { c.Worker.TaskCheckInterval = -time.Millisecond }, "HERALD_WORKER_TASK_CHECK_INTERVAL must be > 0"},
		{"shutdown timeout", func(c *Config) { c.Worker.ShutdownTimeout = 0 }, "HERALD_WORKER_SHUTDOWN_TIMEOUT must be > 0"},
		{"lag interval", func(c *Config) { c.Maintenance.LagInterval = 0 }, "HERALD_MAINTENANCE_LAG_INTERVAL must be > 0"},
		{"publish lanes", func(c *Config) { c.PublishLanes = 0 }, "HERALD_PUBLISH_LANES must be ≥1"},
		{"report linger", func(c *Config) { c.Worker.ReportLinger = 21 * time.Millisecond }, "HERALD_WORKER_REPORT_LINGER must be between 0 and 20ms"},
		{"notify linger", func(c *Config) { c.PublishNotifyLinger = -time.Millisecond }, "HERALD_PUBLISH_NOTIFY_LINGER must be between 0 and 20ms"},
		{"report gather", func(c *Config) { c.Dispatcher.ReportGather = -time.Millisecond }, "HERALD_DISPATCHER_REPORT_GATHER must be between 0 and 20ms"},
		{"response cap", func(c *Config) { c.Worker.ResponseCapBytes = 0 }, "HERALD_WORKER_RESPONSE_CAP_BYTES must be ≥1"},
		{"retention", func(c *Config) { c.Maintenance.AttemptRetention = time.Hour }, "HERALD_MAINTENANCE_ATTEMPT_RETENTION must be at least 24h"},
	} {
		c := base
		tc.mutate(&c)
		require.ErrorContains(t, c.Validate(), tc.want, tc.name)
	}
	c := base
	c.Dispatcher.PollInterval, c.Worker.ProgressInterval = 0, 0
	require.Len(t, strings.Split(c.Validate().Error(), "\n"), 2, "every violation is reported")

	c = base
	c.Worker.ShutdownTimeout = 31 * time.Second
	require.NoError(t, c.Validate(), "below the bound is allowed (tests and short-timeout deployments)")
	require.Len(t, c.Warnings(), 1)
	require.Contains(t, c.Warnings()[0], "HERALD_WORKER_SHUTDOWN_TIMEOUT is 31s")
}

// TestValidateRedis: each Redis mode accepts its own settings and refuses those it
// would ignore or that contradict it.
func TestValidateRedis(t *testing.T) {
	t.Parallel()
	base, err := Load()
	require.NoError(t, err)
	require.Equal(t, RedisSingle, base.RedisMode, "single is the default")
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string // empty: accepted
	}{
		{"single", func(c *Config) {}, ""},
		{"single, several addresses", func(c *Config) { c.RedisAddr = "a:1,b:2" }, "lists 2 addresses but HERALD_REDIS_MODE is single"},
		{"empty", func(c *Config) { c.RedisAddr = " " }, "HERALD_REDIS_ADDR is empty"},
		{"empty entry", func(c *Config) { c.RedisMode, c.RedisAddr = RedisCluster, "a:1,,b:2" }, "has an empty address"},
		{"cluster", func(c *Config) { c.RedisMode, c.RedisAddr = RedisCluster, "a:1, b:2" }, ""},
		{"cluster, one seed", func(c *Config) { c.RedisMode = RedisCluster }, ""},
		{"cluster, db", func(c *Config) { c.RedisMode, c.RedisDB = RedisCluster, 2 }, "HERALD_REDIS_DB must be 0"},
		{"cluster, braces", func(c *Config) { c.RedisMode, c.Namespace = RedisCluster, "h{x}" }, "must not contain { or }"},
		{"cluster, master name", func(c *Config) { c.RedisMode, c.RedisMasterName = RedisCluster, "m" }, "applies only with HERALD_REDIS_MODE=sentinel"},
		{"single, master name", func(c *Config) { c.RedisMasterName = "m" }, "applies only with HERALD_REDIS_MODE=sentinel"},
		{"sentinel", func(c *Config) { c.RedisMode, c.RedisAddr, c.RedisMasterName = RedisSentinel, "s1:1,s2:2,s3:3", "m" }, ""},
		{"sentinel, no name", func(c *Config) { c.RedisMode = RedisSentinel }, "HERALD_REDIS_MASTER_NAME is required"},
		{"unknown mode", func(c *Config) { c.RedisMode = "ring" }, `HERALD_REDIS_MODE "ring" is not one of single, cluster, sentinel`},
	} {
		c := base
		tc.mutate(&c)
		if tc.want == "" {
			require.NoError(t, c.Validate(), tc.name)
			continue
		}
		require.ErrorContains(t, c.Validate(), tc.want, tc.name)
	}
}

// TestRedisWorkerVariables: only the settings of a worker taking its jobs over
// Redis are named, once each, sorted.
func TestRedisWorkerVariables(t *testing.T) {
	t.Parallel()
	got := RedisWorkerVariables([]string{"HERALD_WORKER_PUSH_JOBS=false", "HERALD_WORKER_CONCURRENCY=4", "PATH=/bin",
		"HERALD_WORKER_HEARTBEAT_TTL=5s", "HERALD_WORKER_PUSH_JOBS=true"})
	require.Equal(t, []string{"HERALD_WORKER_HEARTBEAT_TTL", "HERALD_WORKER_PUSH_JOBS"}, got)
	require.Empty(t, RedisWorkerVariables([]string{"HERALD_WORKER_CONCURRENCY=4"}))
}

// TestMetricsAddrEmptyDisables: HERALD_METRICS_ADDR set to the empty string turns
// the metrics listener off; unset, it is the default.
func TestMetricsAddrEmptyDisables(t *testing.T) {
	t.Setenv("HERALD_METRICS_ADDR", "")
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.MetricsAddr != "" {
		t.Fatalf("empty HERALD_METRICS_ADDR gave %q", c.MetricsAddr)
	}
	os.Unsetenv("HERALD_METRICS_ADDR")
	if c, _ = Load(); c.MetricsAddr != "127.0.0.1:9090" {
		t.Fatalf("unset HERALD_METRICS_ADDR gave %q", c.MetricsAddr)
	}
}
