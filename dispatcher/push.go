package dispatcher

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/metrics"
)

// Pushing (delivery/push.go). flushPack first offers a step's jobs to live workers:
// the worker with the most room takes as many as fit, the next the rest, and each
// gets them in one PUBLISH per pack (delivery.Packs) on its jobs channel. What no
// worker has room for, or what a PUBLISH no subscriber received (answer 0) or that
// failed, is enqueued on asynq as before.
//
// Room: a worker announcing Concurrency c takes at most c / (live dispatchers),
// at least 1, of this dispatcher's jobs at once, so the dispatchers together never
// queue more on it than its slots.
//
// Liveness: the view of Keys.Workers is read before a flush when older than
// delivery.WorkerRefresh, and on the poll tick while pushed jobs are out; nothing
// is read while none is. An entry whose Seq has not changed for
// delivery.WorkerLapse lapses: its worker died, and every job pushed to it is
// re-dispatched at once as its next generation. An entry removed (a worker
// stopping) re-dispatches nothing: that worker finishes and reports what it holds,
// and a job it does not report is re-dispatched at its deadline.

// workerView is a dispatcher's view of one worker taking pushed jobs.
type workerView struct {
	id          string
	concurrency int
	seq         int64
	seenAt      time.Time // when seq was first read
	refusedSeq  int64     // seq at which a push reached no subscriber; 0 for none
	lapsed      bool
	held        map[*jobState]struct{} // jobs pushed to it and not finished
}

// pushWorkers is the view of Keys.Workers.
type pushWorkers struct {
	byID   map[string]*workerView
	readAt time.Time
}

// readWorkers refreshes the view of Keys.Workers (one HGETALL), lapses entries that
// stopped changing (re-dispatching their jobs) and deletes entries lapsed for
// delivery.WorkerForget.
func (d *Dispatcher) readWorkers(ctx context.Context, now time.Time) {
	d.workers.readAt = now
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	all, err := d.rdb.HGetAll(rctx, d.keys.Workers()).Result()
	if err != nil {
		d.log.Warn("read workers taking pushed jobs", "err", err)
		return
	}
	if d.workers.byID == nil {
		d.workers.byID = map[string]*workerView{}
	}
	for id := range d.workers.byID {
		if _, ok := all[id]; !ok {
			delete(d.workers.byID, id) // stopped: it reports what it holds (see Pushing)
		}
	}
	var forget []string
	for id, raw := range all {
		e, err := delivery.ParseWorkerEntry(raw)
		if err != nil {
			continue
		}
		v := d.workers.byID[id]
		if v == nil {
			v = &workerView{id: id, held: map[*jobState]struct{}{}}
			d.workers.byID[id] = v
		}
		v.concurrency = e.Concurrency
		if e.Seq != v.seq {
			v.seq, v.seenAt, v.lapsed = e.Seq, now, false
			continue
		}
		if now.Sub(v.seenAt) >= delivery.WorkerLapse && !v.lapsed {
			v.lapsed = true
			d.workerLapsed(ctx, v, now)
		}
		if now.Sub(v.seenAt) >= delivery.WorkerForget {
			forget = append(forget, id)
			delete(d.workers.byID, id)
		}
	}
	if len(forget) > 0 {
		_ = d.rdb.HDel(rctx, d.keys.Workers(), forget...).Err()
	}
}

// workerLapsed re-dispatches every job pushed to v, a worker that died.
func (d *Dispatcher) workerLapsed(ctx context.Context, v *workerView, now time.Time) {
	d.pruneHeld(v)
	if len(v.held) > 0 {
		d.log.Warn("worker taking pushed jobs lapsed; re-dispatching its jobs", "worker", v.id, "jobs", len(v.held))
	}
	for js := range v.held {
		delete(v.held, js)
		metrics.JobsRedispatched.Inc()
		d.retire(ctx, js, now)
	}
}

// pruneHeld forgets the jobs of v that finished or were re-dispatched.
func (d *Dispatcher) pruneHeld(v *workerView) {
	for js := range v.held {
		if d.jobs[js.job.TaskID()] != js {
			delete(v.held, js)
		}
	}
}

// watchWorkers reads the view again on the poll tick while jobs pushed by this
// dispatcher are out, so a worker that died is noticed within WorkerLapse +
// WorkerRefresh.
func (d *Dispatcher) watchWorkers(ctx context.Context, now time.Time) {
	if d.rdb == nil || now.Sub(d.workers.readAt) < delivery.WorkerRefresh {
		return
	}
	out := false
	for _, v := range d.workers.byID {
		d.pruneHeld(v)
		out = out || len(v.held) > 0
	}
	if out {
		d.readWorkers(ctx, now)
	}
}

// push offers jobs (encoded alike) to live workers (see Pushing) and returns those
// left for asynq.
func (d *Dispatcher) push(ctx context.Context, live []*jobState, encoded [][]byte, now time.Time) ([]*jobState, [][]byte) {
	if d.rdb == nil {
		return live, encoded // a dispatcher driven through its seams alone (unit tests) has no Redis
	}
	if len(d.workers.byID) == 0 {
		return live, encoded
	}
	views := make([]*workerView, 0, len(d.workers.byID))
	for _, v := range d.workers.byID {
		d.pruneHeld(v)
		views = append(views, v)
	}
	rooms := roomsFor(views, max(len(d.members.live), 1))
	var leftJobs []*jobState
	var leftEnc [][]byte
	i := 0
	for _, r := range rooms {
		if i == len(live) {
			break
		}
		n := min(r.free, len(live)-i)
		jobs, enc := live[i:i+n], encoded[i:i+n]
		i += n
		for _, run := range delivery.Packs(enc) {
			lj, le := d.pushTo(ctx, r.v, jobs[run[0]:run[1]], enc[run[0]:run[1]], now)
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
func (d *Dispatcher) pushTo(ctx context.Context, v *workerView, jobs []*jobState, enc [][]byte, now time.Time) ([]*jobState, [][]byte) {
	timeout := time.Duration(0)
	for _, js := range jobs {
		timeout = max(timeout, js.deadline.Sub(now))
	}
	msg, err := delivery.EncodePush(enc, timeout)
	if err != nil {
		return jobs, enc
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	n, err := delivery.Publish(pctx, d.rdb, delivery.Sharded(d.rdb), d.keys.WorkerJobs(v.id), string(msg)).Result()
	if err != nil || n == 0 {
		// Gone (or Redis failed): asynq takes them. After an error the worker may
		// still have got them: the same job then runs twice, under one TaskID.
		v.refusedSeq = v.seq
		if err != nil {
			d.log.Warn("push delivery jobs; enqueueing them instead", "worker", v.id, "err", err)
		}
		return jobs, enc
	}
	for _, js := range jobs {
		js.worker, js.task = v.id, ""
		v.held[js] = struct{}{}
	}
	return nil, nil
}
