package bus

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// beat keeps job j's heartbeat key (delivery.Keys.Heartbeat), the one sign
// RedisJobs.Alive reads of a job a worker holds, alive from the moment the worker
// took the job (pushed into its run queue, or an asynq task handed to it) until
// the returned stop is called: written first after ttl/3 and then every ttl/3 with
// expiry ttl, and deleted by stop if it was written. A job held shorter than ttl/3
// (most jobs) costs no Redis command: its deadline (≥ JobDeadlineBase, 40 s) is
// far longer. A worker that dies stops writing, and the key expires within ttl.
func beat(rdb redis.UniversalClient, keys delivery.Keys, ttl time.Duration, j delivery.Job) (stop func()) {
	key := keys.Heartbeat(j.Owner, j.TaskID())
	every := max(ttl/3, time.Millisecond)
	done := make(chan struct{})
	wrote := make(chan bool, 1)
	go func() {
		w := false
		defer func() { wrote <- w }()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				if rdb.Set(ctx, key, 1, ttl).Err() == nil {
					w = true
				}
				cancel()
			}
		}
	}()
	return func() {
		close(done)
		if <-wrote {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = rdb.Del(ctx, key).Err()
		}
	}
}
