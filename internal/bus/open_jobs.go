package bus

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// OpenJob is a job another dispatcher sent that a worker still holds: Key is its
// heartbeat key (delivery.Keys.Heartbeat), POSTs the most POSTs it may have open
// (its parallelism).
type OpenJob struct {
	Key   string
	POSTs int
}

// openScanCount is the COUNT of each SCAN page Open reads.
const openScanCount = 1000

// Open lists the jobs of group's queue owner sent that a worker holds: the live
// heartbeat keys matching Keys.HeartbeatPattern (one SCAN of the keyspace, every
// master on a cluster, then one GET per key found). A takeover calls it once per
// cursor taken, so its cost is that of a rare event.
func (b *RedisJobs) Open(ctx context.Context, owner string, group, queue int64) ([]OpenJob, error) {
	var keys []string
	err := delivery.Scan(ctx, b.rdb, b.keys.HeartbeatPattern(owner, group, queue), openScanCount, func(page []string) {
		keys = append(keys, page...)
	})
	if err != nil || len(keys) == 0 {
		return nil, err
	}
	return b.openOf(ctx, keys)
}

// StillOpen returns those of jobs whose heartbeat key still lives.
func (b *RedisJobs) StillOpen(ctx context.Context, jobs []OpenJob) ([]OpenJob, error) {
	keys := make([]string, len(jobs))
	for i, j := range jobs {
		keys[i] = j.Key
	}
	return b.openOf(ctx, keys)
}

// openOf reads keys in one pipeline (their slots may differ on a cluster) and
// returns those that exist, each with the parallelism its value holds (1 if it does
// not parse).
func (b *RedisJobs) openOf(ctx context.Context, keys []string) ([]OpenJob, error) {
	pipe := b.rdb.Pipeline()
	for _, k := range keys {
		pipe.Get(ctx, k)
	}
	cmds, _ := pipe.Exec(ctx) // each command's error is read below
	var out []OpenJob
	for i, c := range cmds {
		v, err := c.(*redis.StringCmd).Result()
		if errors.Is(err, redis.Nil) {
			continue // the job ended
		}
		if err != nil {
			return nil, err
		}
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 {
			n = 1
		}
		out = append(out, OpenJob{Key: keys[i], POSTs: n})
	}
	return out, nil
}
