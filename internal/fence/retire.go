package fence

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// Retired is the fence version of a deleted group's queues: above every cursor
// version, so every job of the group is stale, retry jobs included.
const Retired = math.MaxInt64

// retire sets every listed field to Retired, publishes the announcement and lets
// the hash expire. KEYS[1] the fence hash; ARGV[1] channel, ARGV[2] message, ARGV[3]
// TTL in ms, then queue ids.
var retire = redis.NewScript(`
for i = 4, #ARGV do
  redis.call('HSET', KEYS[1], ARGV[i], '` + strconv.FormatInt(Retired, 10) + `')
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
`)

// Retire fences every job of a deleted group on the listed queues, whatever its
// version, and announces it; the fence hash then expires after ttl (by then the
// workers' group caches have dropped the group, and a job of a missing group sends
// nothing). One Redis round trip; with no queues it only deletes the hash.
func Retire(ctx context.Context, rdb redis.Scripter, keys delivery.Keys, group int64, queues []int64, ttl time.Duration) error {
	if len(queues) == 0 {
		return rdb.Eval(ctx, "redis.call('DEL', KEYS[1]) return 1", []string{keys.Fence(group)}).Err()
	}
	var msg strings.Builder
	msg.WriteString(strconv.FormatInt(group, 10))
	args := make([]any, 3, 3+len(queues))
	for _, q := range queues {
		msg.WriteString(" " + strconv.FormatInt(q, 10) + ":" + strconv.FormatInt(Retired, 10))
		args = append(args, q)
	}
	args[0], args[1], args[2] = keys.FenceChannel(), msg.String(), max(ttl.Milliseconds(), 1)
	return retire.Run(ctx, rdb, []string{keys.Fence(group)}, args...).Err()
}

// Retired reports whether (group, queue) is fenced as a deleted group's, as last
// seen: a map read, no Redis command. Retry jobs, which carry no cursor version,
// check this instead of Stale.
func (w *Watcher) Retired(group, queue int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fences[[2]int64{group, queue}] == Retired
}
