// Package fence makes offset resets and cursor takeovers fenced events for workers.
// Each cursor change that bumps a cursor's version (a reset in the api, a claim in a
// dispatcher) raises the (group, queue) fence in Redis to the new version before it
// takes effect, and announces it on a pub/sub channel. A worker reads the fence once
// per job (one HGET) and keeps announced fences in memory, so the check before each
// POST costs no Redis command: a job whose version is below the fence sends nothing
// more, and its unsent messages are dropped (the new version's cursor owns them).
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

// parse reads an announcement "<group> <queue>:<version> …".
func parse(s string) (group int64, versions map[int64]int64, ok bool) {
	fields := strings.Fields(s)
	if len(fields) < 2 {
		return 0, nil, false
	}
	group, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return 0, nil, false
	}
	versions = make(map[int64]int64, len(fields)-1)
	for _, f := range fields[1:] {
		qs, vs, found := strings.Cut(f, ":")
		q, err1 := strconv.ParseInt(qs, 10, 64)
		v, err2 := strconv.ParseInt(vs, 10, 64)
		if !found || err1 != nil || err2 != nil {
			return 0, nil, false
		}
		versions[q] = v
	}
	return group, versions, true
}
