package bus

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
)

// Pushing (push_codec.go). Send first offers a step's jobs to live workers: the
// worker with the most room takes as many as fit, the next the rest, and each gets
// them in one PUBLISH per pack (Packs) on its jobs channel. What no worker has room
// for, or what a PUBLISH no subscriber received (answer 0) or that failed, is
// enqueued on asynq.
//
// Room: a worker announcing Concurrency c takes at most c / (live dispatchers), at
// least 1, of this dispatcher's jobs at once, so the dispatchers together never
// queue more on it than its slots.
//
// Liveness: the view of Keys.Workers is read before a Send when older than
// WorkerRefresh (WorkerRetry while a worker whose push failed is skipped), and by
// Lost while pushed jobs are out; nothing is read while none is. An entry whose
// Seq has not changed for WorkerLapse lapses: its worker died, and every job
// pushed to it is Lost. An entry removed (a worker stopping) loses
// nothing: that worker finishes and reports what it holds, and a job it does not
// report is sent again at its deadline.

// workerView is a dispatcher's view of one worker taking pushed jobs.
type workerView struct {
	id          string
	concurrency int
	seq         int64
	seenAt      time.Time // when seq was first read
	refusedSeq  int64     // seq at which a push reached no subscriber; 0 for none
	lapsed      bool
	held        map[string]struct{} // task ids pushed to it and not forgotten
}

// readWorkers refreshes the view of Keys.Workers (one HGETALL), lapses entries that
// stopped changing (their jobs become Lost) and deletes entries lapsed for
// WorkerForget.
func (b *RedisJobs) readWorkers(ctx context.Context, now time.Time) {
	b.readAt = now
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	all, err := b.rdb.HGetAll(rctx, b.keys.Workers()).Result()
	if err != nil {
		b.log.Warn("read workers taking pushed jobs", "err", err)
		return
	}
	for id := range b.workers {
		if _, ok := all[id]; !ok {
			delete(b.workers, id) // stopped: it reports what it holds (see Pushing)
		}
	}
	var forget []string
	for id, raw := range all {
		e, err := ParseWorkerEntry(raw)
		if err != nil {
			continue
		}
		v := b.workers[id]
		if v == nil {
			v = &workerView{id: id, held: map[string]struct{}{}}
			b.workers[id] = v
		}
		v.concurrency = e.Concurrency
		if e.Seq != v.seq {
			v.seq, v.seenAt, v.lapsed = e.Seq, now, false
			continue
		}
		if now.Sub(v.seenAt) >= WorkerLapse && !v.lapsed {
			v.lapsed = true
			b.workerLapsed(v)
		}
		if now.Sub(v.seenAt) >= WorkerForget {
			forget = append(forget, id)
			delete(b.workers, id)
		}
	}
	if len(forget) > 0 {
		_ = b.rdb.HDel(rctx, b.keys.Workers(), forget...).Err()
	}
}

// workerLapsed makes every job pushed to v, a worker that died, Lost.
func (b *RedisJobs) workerLapsed(v *workerView) {
	if len(v.held) > 0 {
		b.log.Warn("worker taking pushed jobs lapsed; its jobs are sent again", "worker", v.id, "jobs", len(v.held))
	}
	for id := range v.held {
		delete(v.held, id)
		delete(b.carriers, id)
		b.lost = append(b.lost, id)
	}
}

// pushedOut reports whether a job pushed by this dispatcher is out.
func (b *RedisJobs) pushedOut() bool {
	for _, v := range b.workers {
		if len(v.held) > 0 {
			return true
		}
	}
	return false
}

// skipping reports whether a live worker is skipped because a push to it failed at
// its current seq (Flush then reads Keys.Workers every WorkerRetry, to find its
// next announce soon).
func (b *RedisJobs) skipping() bool {
	for _, v := range b.workers {
		if !v.lapsed && v.refusedSeq == v.seq {
			return true
		}
	}
	return false
}

// push offers jobs (encoded alike) to live workers (see Pushing) and returns those
// left for asynq.
func (b *RedisJobs) push(ctx context.Context, live []Outgoing, encoded [][]byte) ([]Outgoing, [][]byte) {
	if len(b.workers) == 0 {
		return live, encoded
	}
	views := make([]*workerView, 0, len(b.workers))
	for _, v := range b.workers {
		views = append(views, v)
	}
	rooms := roomsFor(views, b.peers)
	var leftJobs []Outgoing
	var leftEnc [][]byte
	i := 0
	for _, r := range rooms {
		if i == len(live) {
			break
		}
		n := min(r.free, len(live)-i)
		jobs, enc := live[i:i+n], encoded[i:i+n]
		i += n
		for _, run := range Packs(enc) {
			lj, le := b.pushTo(ctx, r.v, jobs[run[0]:run[1]], enc[run[0]:run[1]])
			leftJobs, leftEnc = append(leftJobs, lj...), append(leftEnc, le...)
		}
	}
	return append(leftJobs, live[i:]...), append(leftEnc, encoded[i:]...)
}

// room is how many more jobs a worker takes from this dispatcher.
type room struct {
	v    *workerView
	free int
}

// roomsFor returns the workers among views that take pushed jobs now — not lapsed,
// not refused at their current seq, concurrency above 0 — with their free room,
// most room first: each takes at most concurrency / dispatchers (at least 1) of
// this dispatcher's jobs at once, less those it holds.
func roomsFor(views []*workerView, dispatchers int) []room {
	var rooms []room
	for _, v := range views {
		if v.lapsed || v.refusedSeq == v.seq || v.concurrency == 0 {
			continue
		}
		if free := max(v.concurrency/max(dispatchers, 1), 1) - len(v.held); free > 0 {
			rooms = append(rooms, room{v, free})
		}
	}
	slices.SortStableFunc(rooms, func(a, b room) int { return cmp.Compare(b.free, a.free) })
	return rooms
}

// pushTo PUBLISHes jobs to worker v and returns them if no subscriber received them.
func (b *RedisJobs) pushTo(ctx context.Context, v *workerView, jobs []Outgoing, enc [][]byte) ([]Outgoing, [][]byte) {
	timeout := time.Duration(0)
	for _, o := range jobs {
		timeout = max(timeout, o.Timeout)
	}
	msg, err := EncodePush(enc, timeout)
	if err != nil {
		return jobs, enc
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	n, err := delivery.Publish(pctx, b.rdb, delivery.Sharded(b.rdb), b.keys.WorkerJobs(v.id), string(msg)).Result()
	if err != nil || n == 0 {
		// Gone (or Redis failed): asynq takes them. After an error the worker may
		// still have got them: the same job then runs twice, under one TaskID.
		v.refusedSeq = v.seq
		if err != nil {
			b.log.Warn("push delivery jobs; enqueueing them instead", "worker", v.id, "err", err)
		}
		return jobs, enc
	}
	for _, o := range jobs {
		id := o.Job.TaskID()
		b.carriers[id] = carrier{worker: v.id}
		v.held[id] = struct{}{}
	}
	return nil, nil
}
