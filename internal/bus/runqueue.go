package bus

import (
	"context"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
)

// queued is a job that reached a worker and waits for a slot; done, if set, is
// called once the job returned.
type queued struct {
	job     delivery.Job
	timeout time.Duration
	done    func()
	hold    *hold // the pushed job's place under its source's lease (lease.go); nil in process
}

// runQueue holds the jobs that reached a worker in memory (InProcess) or pushed
// (Redis) until one of its slots is free, and runs them in arrival order (a job that
// arrives while nothing is queued and a slot is free starts at once, possibly beside
// one serve is still starting: jobs carry no order between them, the dispatcher
// orders messages within a job and between the jobs of a key or queue).
type runQueue struct {
	mu     sync.Mutex
	queue  []queued
	r      Runner // set by serve: add may then start a job itself
	slots  Slots
	closed bool          // add refuses: the source stopped taking jobs
	more   chan struct{} // a job was added, or the queue closed (buffer of one)
	frozen chan struct{} // closed by freeze: no waiting job starts any more
	stop   chan struct{} // closed by halt: waiting jobs are returned
	served chan struct{} // closed when serve returned
	jobs   sync.WaitGroup
}

func newRunQueue() *runQueue {
	return &runQueue{more: make(chan struct{}, 1), frozen: make(chan struct{}), stop: make(chan struct{}), served: make(chan struct{})}
}

// add queues jobs and reports whether it took them: false once closed. While
// nothing waits and a slot is free, a job starts at once on the caller's
// goroutine's behalf, without waking serve (the common case of a worker with room).
func (q *runQueue) add(jobs ...queued) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	for len(jobs) > 0 && len(q.queue) == 0 && q.r != nil && q.slots.TryTake() {
		q.start(jobs[0])
		jobs = jobs[1:]
	}
	q.queue = append(q.queue, jobs...)
	q.mu.Unlock()
	if len(jobs) > 0 {
		q.poke()
	}
	return true
}

// start runs j on the slot taken for it, bounded by its timeout.
func (q *runQueue) start(j queued) {
	q.jobs.Add(1)
	go func() {
		defer q.jobs.Done()
		ctx, cancel := context.WithTimeout(withHold(context.Background(), j.hold), j.timeout)
		defer cancel()
		q.r.RunJob(ctx, j.job)
		q.slots.Give()
		if j.done != nil {
			j.done()
		}
	}()
}

func (q *runQueue) poke() {
	select {
	case q.more <- struct{}{}:
	default:
	}
}

// close refuses later adds; serve runs (or, after halt, returns) what is queued.
func (q *runQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.poke()
}

// next takes the first queued job; ok is false when the queue is empty, and end
// is true when it also is closed.
func (q *runQueue) next() (j queued, ok, end bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) == 0 {
		return queued{}, false, q.closed
	}
	j = q.queue[0]
	q.queue[0] = queued{}
	q.queue = q.queue[1:]
	return j, true, false
}

// serve runs queued jobs in order on r, each on a slot as soon as one is free,
// bounded by its timeout, until the queue is closed and empty; once frozen a job
// still waiting starts no more and is returned after halt.
func (q *runQueue) serve(r Runner, slots Slots) {
	defer close(q.served)
	q.mu.Lock()
	q.r, q.slots = r, slots
	q.mu.Unlock()
	for {
		j, ok, end := q.next()
		if end {
			return
		}
		if !ok {
			<-q.more
			continue
		}
		if q.isFrozen() || !slots.Take(context.Background(), q.frozen) {
			<-q.stop // returned only once the source's halt ran (Stop)
			r.ReturnJob(j.job)
			if j.done != nil {
				j.done()
			}
			continue
		}
		q.start(j)
	}
}

// freeze closes the queue and lets no waiting job start, even on a slot freed
// later; serve holds them until halt. A source's Stop freezes before it calls its
// halt, so nothing starts after the worker was told to stop.
func (q *runQueue) freeze() {
	q.close()
	close(q.frozen)
}

// isFrozen reports whether freeze ran.
func (q *runQueue) isFrozen() bool {
	select {
	case <-q.frozen:
		return true
	default:
		return false
	}
}

// halt makes serve return the jobs still waiting (freezing first if Stop did not);
// it returns once serve returned and every job it started has.
func (q *runQueue) halt() {
	if !q.isFrozen() {
		q.freeze()
	}
	close(q.stop)
	<-q.served
	q.jobs.Wait()
}
