package worker

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
)

// UseLocal links the worker to the dispatcher of its own process (`herald all`):
// that dispatcher's jobs run here without asynq while one of Concurrency local slots
// is free, and their reports go back through l (delivery.Local). Call it before Run.
func (w *Worker) UseLocal(l *delivery.Local) {
	w.local = l
	w.localSlots = make(chan struct{}, w.cfg.Concurrency)
}

// runLocal is the delivery.LocalRunner: it starts j on a free local slot, bounded by
// timeout like an asynq task, unless the worker is stopping or every slot is busy.
func (w *Worker) runLocal(j delivery.Job, timeout time.Duration, done func()) bool {
	select {
	case w.localSlots <- struct{}{}:
	default:
		return false
	}
	w.stopMu.Lock()
	if w.isStopping() {
		w.stopMu.Unlock()
		<-w.localSlots
		return false
	}
	w.localJobs.Add(1)
	w.stopMu.Unlock()
	go func() {
		defer func() {
			<-w.localSlots
			done()
			w.localJobs.Done()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		w.run(ctx, j)
	}()
	return true
}
