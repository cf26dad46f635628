package dispatcher

import (
	"context"
	"errors"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heraldhq/herald/internal/delivery"
)

// Packing. Jobs for asynq wait in d.packing until the cut or the deadline check that
// made them ends (flushPack), and then go as one task per delivery.Packs run: jobs of
// several groups or queues cut in one step share one enqueue, one dequeue and one
// completion. Nothing waits for a timer: a step that cut one job sends it alone, as a
// TypeDeliver task under the job's own TaskID, exactly as before packing.
//
// Re-dispatch stays per job. Each job keeps its TaskID, generation, deadline,
// heartbeat key and reports; jobState.task names the asynq task that carries it, and
// checkDeadlines asks asynq about that task: pending, scheduled or retry extends the
// job's deadline; active (a worker died holding it) or gone re-dispatches that job
// alone as generation n+1, which the next flush may pack with others. A pack whose
// enqueue fails releases every job in it, as a failed single enqueue did.

// queueForPack registers js to be enqueued by the next flushPack.
func (d *Dispatcher) queueForPack(js *jobState) {
	d.packing = append(d.packing, js)
}

// flushPack pushes the jobs waiting in d.packing to live workers (push.go) and
// enqueues the rest on asynq as packs (see Packing), waking the workers once. A job finished before the flush (its group paused or reset in the
// same step) is left out.
func (d *Dispatcher) flushPack(ctx context.Context) {
	if len(d.packing) == 0 {
		return
	}
	if d.rdb != nil && d.now().Sub(d.workers.readAt) >= delivery.WorkerRefresh {
		d.readWorkers(ctx, d.now()) // before taking d.packing: a lapsed worker's jobs join this flush
	}
	jobs := d.packing
	d.packing = nil
	var live []*jobState
	var encoded [][]byte
	for _, js := range jobs {
		if d.jobs[js.job.TaskID()] != js {
			continue
		}
		b, err := delivery.EncodeJob(js.job)
		if err != nil {
			d.packFailed([]*jobState{js}, err)
			continue
		}
		live, encoded = append(live, js), append(encoded, b)
	}
	if len(live) == 0 {
		return
	}
	now := d.now()
	if live, encoded = d.push(ctx, live, encoded, now); len(live) == 0 {
		return // every job pushed to a worker (push.go)
	}
	sent := false
	for _, run := range delivery.Packs(encoded) {
		pack, enc := live[run[0]:run[1]], encoded[run[0]:run[1]]
		t, err := delivery.NewDeliverPack(enc)
		if err != nil {
			d.packFailed(pack, err)
			continue
		}
		id := delivery.PackTaskID(pack[0].job.TaskID(), len(pack))
		timeout := time.Duration(0)
		for _, js := range pack {
			timeout = max(timeout, js.deadline.Sub(now))
		}
		_, err = d.queue.EnqueueContext(ctx, t, asynq.TaskID(id), asynq.Queue(d.keys.AsynqQueue()),
			asynq.MaxRetry(0), asynq.Timeout(max(timeout, time.Second)), asynq.Retention(0))
		if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) { // a conflict: already enqueued, a repeat is harmless
			d.packFailed(pack, err)
			continue
		}
		for _, js := range pack {
			js.task = id
		}
		sent = true
	}
	if sent {
		d.wakeWorkers()
	}
}

// packFailed releases the jobs of a pack that could not be enqueued: their credits
// go back and their messages come due again after enqueueRetry (a retry job's when its
// claim lease ends), as enqueueJob does for a failed enqueue.
func (d *Dispatcher) packFailed(pack []*jobState, err error) {
	for _, js := range pack {
		d.log.Warn("enqueue delivery job", "task", js.job.TaskID(), "retry", js.job.Retry, "ordered", js.job.Ordered,
			"generation", js.job.Generation, "jobs_in_task", len(pack), "err", err)
		d.finishJob(js, enqueueRetry)
	}
}

// taskID is the asynq task that carries js: its pack's, else its own TaskID.
func (js *jobState) taskID() string {
	if js.task != "" {
		return js.task
	}
	return js.job.TaskID()
}
