package bus

import "context"

// Slots is a worker's one semaphore, of HERALD_WORKER_CONCURRENCY slots. A source
// takes a slot for each job before it hands the job to the Runner and gives it back
// once Runner.RunJob returned (the job's final report flushed); each further POST the
// job sends in parallel (up to its Parallelism) runs on one more slot, taken with
// TryTake only when one is free. So the jobs a worker runs and the POSTs they have
// open are each at most its concurrency, whatever carried the jobs, and a job never
// waits for a slot while it holds one (no deadlock between jobs).
type Slots chan struct{}

// NewSlots returns a semaphore of n slots (n ≥ 1).
func NewSlots(n int) Slots { return make(Slots, max(n, 1)) }

// TryTake takes a free slot and reports whether there was one; it never waits.
func (s Slots) TryTake() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

// Take waits for a free slot and reports whether it took one: false when ctx ends
// or stop is closed first.
func (s Slots) Take(ctx context.Context, stop <-chan struct{}) bool {
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
	case <-stop:
		return false
	}
}

// Give returns a slot taken with TryTake or Take.
func (s Slots) Give() { <-s }

// Busy reports how many slots are taken.
func (s Slots) Busy() int { return len(s) }
