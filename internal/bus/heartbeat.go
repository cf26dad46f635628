package bus

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// FirstBeat bounds when a held job's heartbeat key is first written: a dispatcher
// takes a dead owner's cursors no sooner than LeaseDuration − HeartbeatInterval
// (2 s by default) after the owner's last heartbeat, so by then every job the dead
// owner sent that a worker still runs has its key (RedisJobs.Open).
const FirstBeat = time.Second

// beat keeps job j's heartbeat key (delivery.Keys.Heartbeat; its value the job's
// parallelism, the most POSTs it opens at once), the one sign RedisJobs.Alive and
// Open read of a job a worker holds, alive from the moment the worker took the job
// (pushed into its run queue, or an asynq task handed to it) until the returned
// stop is called: written first after min(ttl/3, FirstBeat) and then every ttl/3
// with expiry ttl, and deleted by stop if it was written. A job held shorter than
// that (most jobs) costs no Redis command: its deadline (≥ JobDeadlineBase, 40 s)
// is far longer. A worker that dies stops writing, and the key expires within ttl.
func beat(rdb redis.UniversalClient, keys delivery.Keys, ttl time.Duration, j delivery.Job) (stop func()) {
	key := keys.Heartbeat(j.Owner, j.TaskID())
	every := max(ttl/3, time.Millisecond)
	posts := max(j.Parallelism, 1)
	done := make(chan struct{})
	wrote := make(chan bool, 1)
	go func() {
		w := false
		defer func() { wrote <- w }()
		t := time.NewTimer(min(every, FirstBeat))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				if rdb.Set(ctx, key, posts, ttl).Err() == nil {
					w = true
				}
				cancel()
				t.Reset(every)
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
