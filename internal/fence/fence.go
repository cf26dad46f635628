// Package fence makes offset resets and cursor takeovers fenced events for workers.
// Each cursor change that bumps a cursor's version (a reset in the api, a claim in a
// dispatcher) raises the (group, queue) fence in Redis to the new version before it
// takes effect, and announces it on a pub/sub channel. A worker reads the fence once
// per job (one HGET) and keeps announced fences in memory, so the check before each
// POST costs no Redis command: a job whose version is below the fence sends nothing
// more, and its unsent messages are dropped (the new version's cursor owns them).
//
// A pause is fenced the same way: the group's status field holds its config version
// at the last pause or resume and whether it paused then (RaiseStatus), so a job's
// POSTs stop at once when the group is paused, not when the worker's group cache
// next refreshes.
//
// Residual window: a POST already on the wire when the fence is raised completes, and
// one started between the raise and the worker's receipt of the announcement (pub/sub
// latency, well under a millisecond on one Redis) is sent too. While a worker's
// subscription is down, running jobs learn of a fence only at their next job start.
package fence

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// raise sets each field to max(current, new) and publishes the announcement, in one
// round trip. KEYS[1] the fence hash; ARGV[1] channel, ARGV[2] message, then pairs
// of queue id and version.
var raise = redis.NewScript(`
for i = 3, #ARGV, 2 do
  local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  if tonumber(ARGV[i + 1]) > cur then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
`)

// Raise lifts the fences of group's queues to at least versions (queue id → cursor
// version; a fence never goes down) and announces them to workers. One Redis round
// trip (EVALSHA); it returns Redis's error, in which case workers may still send
// older jobs (duplicates, never a loss).
func Raise(ctx context.Context, rdb redis.Scripter, keys delivery.Keys, group int64, versions map[int64]int64) error {
	if len(versions) == 0 {
		return nil
	}
	var msg strings.Builder
	msg.WriteString(strconv.FormatInt(group, 10))
	args := make([]any, 2, 2+2*len(versions))
	for q, v := range versions {
		msg.WriteString(" " + strconv.FormatInt(q, 10) + ":" + strconv.FormatInt(v, 10))
		args = append(args, q, v)
	}
	args[0], args[1] = keys.FenceChannel(), msg.String()
	return raise.Run(ctx, rdb, []string{keys.Fence(group)}, args...).Err()
}

// statusField is the fence hash field holding the group's status fence (see
// statusValue); queue fields are numeric, so it never collides with one.
const statusField = "status"

// statusValue encodes a status fence: the group's config version at the pause or
// resume, doubled, plus 1 when it paused. Versions only grow, so the larger value is
// always the later change, and a fence that only rises keeps the last one.
func statusValue(configVersion int64, paused bool) int64 {
	v := 2 * configVersion
	if paused {
		v++
	}
	return v
}

// RaiseStatus records that group's status changed at configVersion (the version
// its row has after the change) to paused (not running) or running, and announces
// it to workers: from then on no worker starts a POST of the group while paused
// (Watcher.Status). A change older than the one recorded is ignored. One Redis
// round trip; on error workers learn the status from their group cache (1 s).
func RaiseStatus(ctx context.Context, rdb redis.Scripter, keys delivery.Keys, group, configVersion int64, paused bool) error {
	v := strconv.FormatInt(statusValue(configVersion, paused), 10)
	msg := strconv.FormatInt(group, 10) + " " + statusField + ":" + v
	return raise.Run(ctx, rdb, []string{keys.Fence(group)}, keys.FenceChannel(), msg, statusField, v).Err()
}

// parse reads an announcement "<group> <queue>:<version> …", where the queue may be
// statusField (returned as status, else -1).
func parse(s string) (group int64, versions map[int64]int64, status int64, ok bool) {
	fields := strings.Fields(s)
	if len(fields) < 2 {
		return 0, nil, 0, false
	}
	group, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return 0, nil, 0, false
	}
	status = -1
	versions = make(map[int64]int64, len(fields)-1)
	for _, f := range fields[1:] {
		qs, vs, found := strings.Cut(f, ":")
		v, err2 := strconv.ParseInt(vs, 10, 64)
		if found && qs == statusField && err2 == nil {
			status = v
			continue
		}
		q, err1 := strconv.ParseInt(qs, 10, 64)
		if !found || err1 != nil || err2 != nil {
			return 0, nil, 0, false
		}
		versions[q] = v
	}
	return group, versions, status, true
}
