package dispatcher

import (
	"context"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// opEvents is the dispatcher's side of Herald's operational events (models.EventsTopic):
// it appends them through the store, notifies the events queue, and keeps the
// per-group gates of the rate-limited kinds. Used from Run's loop only.
type opEvents struct {
	st       *store.Store
	notifier *notify.Notifier
	log      *slog.Logger
	now      Clock
	gates    map[eventGateKey]*eventGate
}

type eventGateKey struct {
	group int64
	typ   models.EventType
}

// eventGate lets one event of a kind per group through per models.EventMinInterval
// and counts what it held back; the next event carries that count.
type eventGate struct {
	last  time.Time
	count int
}

// send publishes one operational event about gs's group through the store and
// notifies the events queue. A failure is logged: the state change it reports has
// already happened.
func (e *opEvents) send(gs *groupState, typ models.EventType, data map[string]any) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q, err := e.st.EventAppend(ctx, models.Event{Type: typ, Time: e.now(), Group: gs.g.Name, Data: data})
	if err != nil {
		e.log.Warn("publish operational event", "type", typ, "group", gs.g.Name, "err", err)
		return
	}
	if err := e.notifier.Queues(ctx, []int64{q}); err != nil {
		e.log.Debug("notify events queue", "err", err)
	}
}

// counted publishes a rate-limited event (dead_letter.created,
// endpoint.throttled) for n occurrences: at most one per group and kind per
// models.EventMinInterval, its data's "count" summing the occurrences since the last
// one sent. Occurrences held back are reported with the next one.
func (e *opEvents) counted(gs *groupState, typ models.EventType, n int, data map[string]any) {
	count, since, ok := e.pass(eventGateKey{gs.g.ID, typ}, n, e.now())
	if !ok {
		return
	}
	if data == nil {
		data = map[string]any{}
	}
	data["count"], data["since"] = count, nil
	if !since.IsZero() {
		data["since"] = since.UTC()
	}
	e.send(gs, typ, data)
}

// pass counts n occurrences of k at now and reports whether an event goes out: the
// first one, then one per models.EventMinInterval. count sums the occurrences since
// the last event sent, since is when that was (zero for the first).
func (e *opEvents) pass(k eventGateKey, n int, now time.Time) (count int, since time.Time, ok bool) {
	if e.gates == nil {
		e.gates = map[eventGateKey]*eventGate{}
	}
	gt := e.gates[k]
	if gt == nil {
		gt = &eventGate{}
		e.gates[k] = gt
	}
	gt.count += n
	if !gt.last.IsZero() && now.Sub(gt.last) < models.EventMinInterval {
		return 0, time.Time{}, false
	}
	count, since = gt.count, gt.last
	gt.last, gt.count = now, 0
	return count, since, true
}
