package delivery

import (
	"strconv"
	"strings"
)

// Keys names every Redis key, pub/sub channel and asynq queue Herald uses under one
// namespace (config.Config.Namespace, default "herald"), so several installations or
// parallel tests can share one Redis. It is the one place those names are spelled;
// nothing else concatenates a namespace. The zero value is not useful: set Namespace.
//
// With HashTags (Redis Cluster) every key carries a hash tag, the part in braces
// that alone decides its cluster slot: `{g<group>}` for a group's keys and
// `{d<dispatcher>}` for a dispatcher's, so each multi-key operation stays in one
// slot while different groups and dispatchers spread over the cluster's nodes
// (docs/decisions.md). Channels carry none: each hashes by its whole name, so
// namespaces spread too. Without HashTags the names are as they always were.
type Keys struct {
	// Namespace prefixes every name below. It must not be empty, and on a cluster
	// must not contain braces (config.Config.Validate).
	Namespace string
	// HashTags adds the hash tags Redis Cluster needs (config.RedisCluster). Default
	// false: single and sentinel mode keep the untagged names.
	HashTags bool
}

// tag returns s as a hash tag `{s}` with HashTags, else s unchanged.
func (k Keys) tag(s string) string {
	if k.HashTags {
		return "{" + s + "}"
	}
	return s
}

// Reports is the Redis stream a dispatcher (by its id, owner) reads its workers'
// reports from (XADD by workers, XREAD by the owner, trimmed by the owner once
// cursor commits cover its entries, read whole by a successor at takeover):
// `<ns>:reportlog:<owner>`, with HashTags `<ns>:reportlog:{d<owner>}`. The name
// differs from the Redis list of earlier versions (`<ns>:reports:<owner>`), so a
// process of either version never meets a key of the other type.
func (k Keys) Reports(owner string) string {
	if k.HashTags {
		owner = k.tag("d" + owner)
	}
	return k.Namespace + ":reportlog:" + owner
}

// ReportsPattern is the SCAN glob matching every dispatcher's Reports stream.
func (k Keys) ReportsPattern() string { return globEscape(k.Namespace) + ":reportlog:*" }

// ReportsOwner returns the dispatcher id of a key named by Reports, and false for
// any other key.
func (k Keys) ReportsOwner(key string) (string, bool) {
	owner, ok := k.untag(key, ":reportlog:", "d")
	return owner, ok && owner != ""
}

// Heartbeat is the Redis key a worker refreshes (TTL config.Worker.HeartbeatTTL,
// default 10 s) while it runs the job with taskID for dispatcher owner:
// `<ns>:job:<taskID>`, with HashTags `<ns>:job:{d<owner>}:<taskID>`, in the slot of
// owner's Reports stream, so a worker's final report and the heartbeat's deletion
// reach one node in order.
func (k Keys) Heartbeat(owner, taskID string) string {
	if k.HashTags {
		return k.Namespace + ":job:" + k.tag("d"+owner) + ":" + taskID
	}
	return k.Namespace + ":job:" + taskID
}

// HeartbeatPattern matches (SCAN MATCH) the Heartbeat keys of the jobs dispatcher
// owner sent for group's queue: with HashTags only owner's, else every owner's
// (task ids start with group:queue:, Job.TaskID).
func (k Keys) HeartbeatPattern(owner string, group, queue int64) string {
	gq := strconv.FormatInt(group, 10) + ":" + strconv.FormatInt(queue, 10) + ":*"
	if k.HashTags {
		return globEscape(k.Namespace+":job:"+k.tag("d"+owner)+":") + gq
	}
	return globEscape(k.Namespace+":job:") + gq
}

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
// lowest cursor version whose jobs may still be sent (internal/fence):
// `<ns>:fence:<group>`, with HashTags `<ns>:fence:{g<group>}`.
func (k Keys) Fence(group int64) string {
	g := strconv.FormatInt(group, 10)
	if k.HashTags {
		g = k.tag("g" + g)
	}
	return k.Namespace + ":fence:" + g
}

// FencePattern is the SCAN glob matching every group's Fence hash.
func (k Keys) FencePattern() string { return globEscape(k.Namespace) + ":fence:*" }

// FenceGroup returns the group id of a key named by Fence, and false for any other key.
func (k Keys) FenceGroup(key string) (int64, bool) {
	g, ok := k.untag(key, ":fence:", "g")
	id, err := strconv.ParseInt(g, 10, 64)
	return id, ok && err == nil
}

// FenceChannel is the Redis pub/sub channel announcing raised fences to workers as
// "<group> <queue>:<version> …": `<ns>:fence`. The fence scripts PUBLISH on it
// (never SPUBLISH: a script's sharded channel would have to share the group's
// slot, and every worker listens to every group), so on a cluster a fence is
// broadcast to all nodes; fences are rare (offset resets, takeovers, pauses).
func (k Keys) FenceChannel() string { return k.Namespace + ":fence" }

// JobsChannel is the Redis pub/sub channel a dispatcher publishes on after it
// enqueued delivery jobs, so that idle workers look at the asynq queue at once
// instead of at their next poll (JobsWaker, config.Worker.TaskCheckInterval):
// `<ns>:jobs`. Messages carry no payload.
func (k Keys) JobsChannel() string { return k.Namespace + ":jobs" }

// Workers is the Redis hash in which every worker process announces that it takes
// pushed jobs (internal/bus/push_codec.go): field the worker's id, value WorkerEntry's encoding,
// rewritten every WorkerRefresh: `<ns>:workers`, with HashTags
// `<ns>:workers:{w<ns>}` (one key: the tag only spreads namespaces).
func (k Keys) Workers() string {
	if k.HashTags {
		return k.Namespace + ":workers:" + k.tag("w"+k.Namespace)
	}
	return k.Namespace + ":workers"
}

// WorkerJobs is the pub/sub channel the worker with id subscribes to for the jobs
// dispatchers push to it (SSUBSCRIBE on a cluster, see Sharded):
// `<ns>:wjobs:<id>`, with HashTags `<ns>:wjobs:{w<id>}`, so workers' channels
// spread over the cluster's slots.
func (k Keys) WorkerJobs(id string) string {
	if k.HashTags {
		id = k.tag("w" + id)
	}
	return k.Namespace + ":wjobs:" + id
}

// untag returns what follows `<ns><infix>` in key, without the hash tag
// `{<kind>…}` that HashTags adds, and false when key is not of that form.
func (k Keys) untag(key, infix, kind string) (string, bool) {
	rest, ok := strings.CutPrefix(key, k.Namespace+infix)
	if ok && k.HashTags {
		var pre, suf bool
		rest, pre = strings.CutPrefix(rest, "{"+kind)
		rest, suf = strings.CutSuffix(rest, "}")
		ok = pre && suf
	}
	return rest, ok
}
