package dispatcher

import (
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
)

// localEventsBuffer is how many local notifications (one per flush and queue) wait
// for the loop; beyond it they are dropped and every queue is read instead.
const localEventsBuffer = 8192

// UseLocal links the dispatcher to the api and worker of its own process (`herald
// all`): set the api's notify.Notifier.Local to Notified, and jobs go to l's worker
// when it has a free slot, reports come back through l. Call it before Run.
func (d *Dispatcher) UseLocal(l *delivery.Local) { d.local = l }

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
	return d.alone.Load()
}
