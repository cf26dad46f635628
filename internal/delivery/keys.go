package delivery

import (
	"strconv"
	"strings"
)

// Keys names every Redis key, pub/sub channel and asynq queue Herald uses under one
// namespace (config.Config.Namespace, default "herald"), so several installations or
// parallel tests can share one Redis. It is the one place those names are spelled;
// nothing else concatenates a namespace. The zero value is not useful: set Namespace.
type Keys struct {
	// Namespace prefixes every name below. It must not be empty.
	Namespace string
}

// Reports is the Redis list a dispatcher (by its id, owner) pops its workers'
// reports from: `<ns>:reports:<owner>`.
func (k Keys) Reports(owner string) string { return k.Namespace + ":reports:" + owner }

// Heartbeat is the Redis key a worker refreshes (TTL config.Worker.HeartbeatTTL,
// default 10 s) while it runs the job with taskID: `<ns>:job:<taskID>`.
func (k Keys) Heartbeat(taskID string) string { return k.Namespace + ":job:" + taskID }

// AsynqQueue is the asynq queue delivery jobs are enqueued on: `<ns>-deliver`.
func (k Keys) AsynqQueue() string { return k.Namespace + "-deliver" }

// NotifyChannel is the Redis pub/sub channel carrying queue ids after publishes and
// "g<id>" after group changes (internal/notify): `<ns>:notify`.
func (k Keys) NotifyChannel() string { return k.Namespace + ":notify" }

// AsynqQueuesSet is asynq's own Redis set of known asynq queue names, shared by every
// namespace on the server; AsynqQueue is a member once a job was enqueued.
const AsynqQueuesSet = "asynq:queues"

// Patterns returns SCAN globs (Redis MATCH syntax) covering every key stored under
// the namespace: Herald's own keys and asynq's keys for AsynqQueue. Removing the
// namespace means deleting these keys and removing AsynqQueue from AsynqQueuesSet.
func (k Keys) Patterns() []string {
	return []string{globEscape(k.Namespace) + ":*", "asynq:{" + globEscape(k.AsynqQueue()) + "}*"}
}

// globEscape quotes the characters SCAN MATCH treats specially.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(s)
}

// Fence is the Redis hash holding a group's cursor fences: field queue id, value the
// lowest cursor version whose jobs may still be sent (internal/fence): `<ns>:fence:<group>`.
func (k Keys) Fence(group int64) string {
	return k.Namespace + ":fence:" + strconv.FormatInt(group, 10)
}

// FenceChannel is the Redis pub/sub channel announcing raised fences to workers as
// "<group> <queue>:<version> …": `<ns>:fence`.
func (k Keys) FenceChannel() string { return k.Namespace + ":fence" }

// JobsChannel is the Redis pub/sub channel a dispatcher publishes on after it
// enqueued delivery jobs, so that idle workers look at the asynq queue at once
// instead of at their next poll (JobsWaker, config.Worker.TaskCheckInterval):
// `<ns>:jobs`. Messages carry no payload.
func (k Keys) JobsChannel() string { return k.Namespace + ":jobs" }
