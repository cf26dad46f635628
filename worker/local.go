package worker

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
)

// UseLocal links the worker to the dispatcher of its own process (`herald all`):
// that dispatcher's jobs run here without asynq while one of the worker's slots is
// free, and their reports go back through l (delivery.Local). Call it before Run.
func (w *Worker) UseLocal(l *delivery.Local) { w.local = l }

// runLocal is the delivery.LocalRunner: it starts j on a free slot of the worker,
// bounded by timeout like an asynq task, unless the worker is stopping or every slot
// is busy.
func (w *Worker) runLocal(j delivery.Job, timeout time.Duration, done func()) bool {
	if !w.slots.tryTake() {
		return false
	}
	w.stopMu.Lock()
	if w.isStopping() {
		w.stopMu.Unlock()
		w.slots.give()
		return false
	}
	w.localJobs.Add(1)
	w.stopMu.Unlock()
	go func() {
		defer func() {
			done()
			w.localJobs.Done()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		w.runHeld(ctx, j)
	}()
	return true
}
