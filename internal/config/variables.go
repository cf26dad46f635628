package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// otherVariables are HERALD_* names read outside Config: the CLI (URL, TOKEN,
// USERNAME, PASSWORD), the examples (API_KEY, SIGNING_SECRET) and the deployment
// scripts (CNF, MYSQL_PASSWORD, VERSION). Names starting HERALD_TEST_ or
// HERALD_DEMO_ (tests, make run) are known too.
var otherVariables = []string{"URL", "TOKEN", "USERNAME", "PASSWORD", "API_KEY", "SIGNING_SECRET", "CNF", "MYSQL_PASSWORD", "VERSION"}

// Variables returns every HERALD_* variable Config reads, sorted.
func Variables() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			if p, ok := f.Tag.Lookup("envPrefix"); ok {
				walk(f.Type, prefix+p)
				continue
			}
			if name, ok := f.Tag.Lookup("env"); ok {
				out = append(out, prefix+strings.Split(name, ",")[0])
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "HERALD_")
	slices.Sort(out)
	return out
}

// UnknownVariables returns the HERALD_* names in environ ("NAME=value" entries,
// as os.Environ) that nothing in Herald reads, sorted: usually a typo such as
// HERALD_WORKER_CONCURENCY, which would otherwise leave the default in force
// silently. Roles log each as a warning at start.
func UnknownVariables(environ []string) []string {
	known := Variables()
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, "HERALD_")
		if !ok || strings.HasPrefix(rest, "TEST_") || strings.HasPrefix(rest, "DEMO_") ||
			slices.Contains(otherVariables, rest) || slices.Contains(known, name) {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// redisWorkerVariables tune a worker that takes its jobs over Redis (bus.RedisSource:
// pushes, asynq's server, heartbeat keys); a worker that shares its process with
// the dispatcher (`herald all` with HERALD_IN_PROCESS) takes them in memory and
// reads none of them.
var redisWorkerVariables = []string{"HERALD_WORKER_PUSH_JOBS", "HERALD_WORKER_TASK_CHECK_INTERVAL",
	"HERALD_WORKER_DELAYED_TASK_CHECK_INTERVAL", "HERALD_WORKER_SHUTDOWN_TIMEOUT", "HERALD_WORKER_HEARTBEAT_TTL"}

// RedisWorkerVariables returns the settings in environ ("NAME=value" entries, as
// os.Environ) that only a worker taking its jobs over Redis reads, sorted: a process
// whose worker takes them in memory refuses to start with any of them set, since
// they would do nothing there.
func RedisWorkerVariables(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(redisWorkerVariables, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MaxEndpointTimeout is the longest timeout_ms a group may have (30 s); the worker
// shutdown timeout should exceed it by ShutdownMargin.
const (
	MaxEndpointTimeout = 30 * time.Second
	ShutdownMargin     = 2 * time.Second
)

// Warnings lists settings that are allowed but probably wrong, for roles to log at
// start: a HERALD_WORKER_SHUTDOWN_TIMEOUT below MaxEndpointTimeout + ShutdownMargin
// (32 s), with which a worker stopping during a slow group's POST re-queues the
// whole job instead of finishing it (duplicates, not loss). Tests and
// deployments whose groups all have short timeouts lower it on purpose, so it is
// not an error.
func (c Config) Warnings() []string {
	var out []string
	if min := MaxEndpointTimeout + ShutdownMargin; c.Worker.ShutdownTimeout < min {
		out = append(out, fmt.Sprintf("HERALD_WORKER_SHUTDOWN_TIMEOUT is %s, below the longest timeout_ms (%s) + %s: "+
			"a worker stopped during a slower POST re-queues its whole job", c.Worker.ShutdownTimeout, MaxEndpointTimeout, ShutdownMargin))
	}
	return out
}
