package dispatcher

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
)

// localJobsWait bounds how long a stopping dispatcher waits for the jobs running on
// its process's worker.
const localJobsWait = 10 * time.Second

// localEventsBuffer is how many local notifications (one per flush and queue) wait
// for the loop; beyond it they are dropped and every queue is read instead.
const localEventsBuffer = 8192

// Notified is the api's notify.LocalSink in `herald all`: it hands a flush's events,
// with the messages' bodies, to this dispatcher's loop without waiting, and reports
// whether this dispatcher is the only live one (then nothing needs publishing on
// Redis). While the loop is not running it reports false, so the Redis path covers
// every dispatcher.
func (d *Dispatcher) Notified(evs []notify.Event) (alone bool) {
	if !d.running.Load() {
		return false
	}
	for _, ev := range evs {
		select {
		case d.localEvents <- ev:
		default:
			d.overflow.Store(true)
		}
	}
	return d.members.alone.Load()
}

// awaitLocalJobs applies reports while jobs run on the process's worker (bus.Jobs.Busy),
// until none does, ctx ends or localJobsWait passes; a job still running then is
// re-sent by the successor (a POST in flight).
func (d *Dispatcher) awaitLocalJobs(ctx context.Context, reports <-chan delivery.Report) {
	deadline := time.NewTimer(localJobsWait)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for d.bus.Busy() > 0 {
		select {
		case r := <-reports:
			d.applyReport(r)
		case <-tick.C:
		case <-deadline.C:
			d.log.Warn("stopping with local jobs still running; their POSTs may be sent again", "jobs", d.bus.Busy())
			return
		case <-ctx.Done():
			return
		}
	}
}

// applyWaiting applies every report already waiting in reports and entries.
func (d *Dispatcher) applyWaiting(reports <-chan delivery.Report, entries <-chan bus.ReportEntry) {
	for {
		select {
		case r := <-reports:
			d.applyReport(r)
		case e := <-entries:
			d.applyEntry(e)
		default:
			return
		}
	}
}
