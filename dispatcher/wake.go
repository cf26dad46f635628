package dispatcher

import "github.com/heraldhq/herald/internal/delivery"

// wakeWorkers asks for one PUBLISH on Keys.JobsChannel after a job was enqueued, so
// idle workers fetch it at once instead of at their next poll. Enqueues of one step
// share a PUBLISH while it is pending (delivery.JobsWaker). It runs on the loop
// goroutine only, like every enqueue, so the lazy creation needs no lock.
func (d *Dispatcher) wakeWorkers() {
	if d.rdb == nil {
		return // a dispatcher driven through its seams alone (unit tests) has no Redis
	}
	if d.waker == nil {
		d.waker = delivery.NewJobsWaker(d.rdb, d.keys)
	}
	d.waker.Poke()
}
