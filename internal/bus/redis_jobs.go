package bus

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// RedisJobs is the dispatcher's end of the Redis bus. Flush pushes a step's jobs to
// live workers with room (redis_push.go) and enqueues the rest on asynq, as packs
// (pack_codec.go), waking idle workers with one PUBLISH. A job's liveness is judged
// in one place, Alive: its heartbeat key (a worker writes it while the job runs
// longer than a third of HeartbeatTTL), else, for an asynq job, its task still
// pending; a pushed job's worker lapsing (Lost) hands it back sooner. Create it
// with NewRedisJobs; it is used from the dispatcher's loop goroutine only.
type RedisJobs struct {
	rdb    redis.UniversalClient
	keys   delivery.Keys
	client *asynq.Client
	insp   *asynq.Inspector
	waker  *JobsWaker
	log    *slog.Logger
	now    func() time.Time

	workers map[string]*workerView // by worker id (redis_push.go)
	readAt  time.Time              // last read of Keys.Workers
	peers   int
	// carriers says what carries each job sent and not forgotten: an asynq task
	// (its own or its pack's id) or a worker it was pushed to.
	carriers map[string]carrier
	lost     []string   // lapsed workers' jobs not yet returned by Lost
	held     []Outgoing // sent, waiting for Flush
}

// carrier is what carries one job: task names its asynq task, worker the worker it
// was pushed to (exactly one is set).
type carrier struct {
	task, worker string
}

// NewRedisJobs returns the dispatcher's end of the Redis bus on rdb and asynq's
// connection opt (the same server or cluster). now may be nil (time.Now).
func NewRedisJobs(rdb redis.UniversalClient, opt asynq.RedisConnOpt, keys delivery.Keys, log *slog.Logger, now func() time.Time) *RedisJobs {
	if now == nil {
		now = time.Now
	}
	return &RedisJobs{rdb: rdb, keys: keys, client: asynq.NewClient(opt), insp: asynq.NewInspector(opt), waker: NewJobsWaker(rdb, keys),
		log: log, now: now, workers: map[string]*workerView{}, peers: 1, carriers: map[string]carrier{}}
}

// Send holds jobs for the next Flush, so a step's jobs share its round trips.
func (b *RedisJobs) Send(_ context.Context, jobs []Outgoing) []Refusal {
	b.held = append(b.held, jobs...)
	return nil
}

// Flush pushes the jobs held since the last Flush to live workers with room and
// enqueues the rest on asynq as packs; it returns the jobs neither took.
func (b *RedisJobs) Flush(ctx context.Context) []Refusal {
	jobs := b.held
	b.held = nil
	if len(jobs) == 0 {
		return nil
	}
	now := b.now()
	if since := now.Sub(b.readAt); since >= WorkerRefresh || (since >= WorkerRetry && b.skipping()) {
		b.readWorkers(ctx, now) // its lapses come back through Lost
	}
	var refused []Refusal
	live := make([]Outgoing, 0, len(jobs))
	encoded := make([][]byte, 0, len(jobs))
	for _, o := range jobs {
		enc, err := EncodeJob(o.Job)
		if err != nil {
			refused = append(refused, Refusal{Job: o.Job, Err: err})
			continue
		}
		live, encoded = append(live, o), append(encoded, enc)
	}
	live, encoded = b.push(ctx, live, encoded)
	sent := false
	for _, run := range Packs(encoded) {
		pack, enc := live[run[0]:run[1]], encoded[run[0]:run[1]]
		t, err := NewDeliverPack(enc)
		if err != nil {
			refused = appendRefused(refused, pack, err)
			continue
		}
		id := PackTaskID(pack[0].Job.TaskID(), len(pack))
		timeout := time.Duration(0)
		for _, o := range pack {
			timeout = max(timeout, o.Timeout)
		}
		_, err = b.client.EnqueueContext(ctx, t, asynq.TaskID(id), asynq.Queue(b.keys.AsynqQueue()),
			asynq.MaxRetry(0), asynq.Timeout(max(timeout, time.Second)), asynq.Retention(0))
		if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) { // a conflict: already enqueued, a repeat is harmless
			refused = appendRefused(refused, pack, err)
			continue
		}
		for _, o := range pack {
			b.carriers[o.Job.TaskID()] = carrier{task: id}
		}
		sent = true
	}
	if sent {
		b.waker.Poke()
	}
	return refused
}

func appendRefused(out []Refusal, jobs []Outgoing, err error) []Refusal {
	for _, o := range jobs {
		out = append(out, Refusal{Job: o.Job, Err: err})
	}
	return out
}

// Alive reports whether j's heartbeat key lives or, for a job asynq carries, its
// task still waits unstarted (pending, scheduled or retry).
func (b *RedisJobs) Alive(ctx context.Context, j delivery.Job) bool {
	id := j.TaskID()
	if n, err := b.rdb.Exists(ctx, b.keys.Heartbeat(j.Owner, id)).Result(); err == nil && n > 0 {
		return true
	}
	c, ok := b.carriers[id]
	if !ok || c.worker != "" {
		return false // a pushed job without a heartbeat: its worker's lapse would have said sooner
	}
	info, err := b.insp.GetTaskInfo(b.keys.AsynqQueue(), c.task)
	return err == nil && (info.State == asynq.TaskStatePending || info.State == asynq.TaskStateScheduled || info.State == asynq.TaskStateRetry)
}

// Lost reads Keys.Workers again once WorkerRefresh passed while pushed jobs are
// out, and returns the jobs of the workers that lapsed since the last call.
func (b *RedisJobs) Lost(ctx context.Context) []string {
	now := b.now()
	if now.Sub(b.readAt) >= WorkerRefresh && b.pushedOut() {
		b.readWorkers(ctx, now)
	}
	lost := b.lost
	b.lost = nil
	return lost
}

// Forget drops job id's carrier, or the job itself while it waits for Flush.
func (b *RedisJobs) Forget(id string) {
	for i, o := range b.held {
		if o.Job.TaskID() == id {
			b.held = append(b.held[:i], b.held[i+1:]...)
			break
		}
	}
	c, ok := b.carriers[id]
	if !ok {
		return
	}
	delete(b.carriers, id)
	if v := b.workers[c.worker]; v != nil {
		delete(v.held, id)
	}
}

// Peers sets how many dispatchers share the workers' room.
func (b *RedisJobs) Peers(n int) { b.peers = max(n, 1) }

// Attach does nothing: reports come through the report stream.
func (b *RedisJobs) Attach(string, chan<- delivery.Report) {}

// Detach does nothing.
func (b *RedisJobs) Detach() {}

// Busy is 0: no job runs in this process.
func (b *RedisJobs) Busy() int { return 0 }

// Close releases asynq's connections.
func (b *RedisJobs) Close() error {
	ierr := b.insp.Close()
	if err := b.client.Close(); err != nil {
		return err
	}
	return ierr
}

var _ Jobs = (*RedisJobs)(nil)
