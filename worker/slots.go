package worker

import "context"

// slots is the worker's one semaphore, of HERALD_WORKER_CONCURRENCY slots. A
// running job holds one slot from before its fence read until its final report is
// flushed, and sends its first batches on it; each further POST the job sends in
// parallel (up to its Parallelism) runs on one more slot, taken only when free. So
// the jobs a worker runs and the POSTs they have open are each at most its
// concurrency, whatever carried the jobs (in-process, pushed or asynq), and a job
// never waits for a slot while it holds one (no deadlock between jobs).
type slots chan struct{}

// newSlots returns a semaphore of n slots (n ≥ 1).
func newSlots(n int) slots { return make(slots, n) }

// tryTake takes a free slot and reports whether there was one; it never waits.
func (s slots) tryTake() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

// take waits for a free slot and reports whether it took one: false when ctx ends or
// stopping is closed first.
func (s slots) take(ctx context.Context, stopping <-chan struct{}) bool {
	select {
	case s <- struct{}{}:
		return true
	default:
	}
	select {
	case s <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	case <-stopping:
		return false
	}
}

// give returns a slot taken with tryTake or take.
func (s slots) give() { <-s }

// busy reports how many slots are taken.
func (s slots) busy() int { return len(s) }
