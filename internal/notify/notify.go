// Package notify carries wake-ups over Redis pub/sub: the api publishes, after each
// flush, the rows it committed to each queue (ids, tags and creation times, so a
// dispatcher need not read them back; bodies too when the flush is small, so
// workers need not either; a flush that follows the last notification closely
// is held and goes with the next, Notifier.Linger),
// and "g<id>" after a group change;
// dispatchers subscribe. A dispatcher publishes "d" after a dead-letter report,
// which wakes the maintenance role's outbox; the outbox publishes the dead-letter
// queues it appended to. The api publishes "t<ms>" after parking delayed messages,
// the earliest due time, which the maintenance leader's mover waits for. A dispatcher publishes "m" when it joins, comes back after
// its lease may have lapsed, or leaves, so the others re-read the live set at once.
// Notifications are hints: a lost one costs at most the fallback poll (queues) or
// the dispatchers' rebalance sweep (groups, membership). In `herald all` a flush's
// notification also goes to the dispatcher of the same process directly
// (NewLocal), with the bodies.
package notify

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/wire"
	"github.com/heraldhq/herald/models"
)

// Row is one committed queue row as a notification carries it. Msg, set on
// notifications passed inside one process and on those over Redis whose bodies fit
// MaxBodyBytesPerPayload, is the whole message with its body; it is shared and must
// not be modified.
type Row struct {
	ID        int64
	Tag       string
	CreatedAt int64 // Unix ms
	// Key is the message key; groups ordered by key order on it.
	Key string
	Msg *models.Message
}

// Event is one wake-up: Queue > 0 after a publish (Rows, when not empty, lists the
// committed rows of the flush in id order; when empty, only that the queue has new
// rows), Group > 0 after a group change, DeadLetters after dead letters were written,
// Dispatchers after the set of live dispatchers changed, DelayedDue (Unix ms) after
// delayed messages were parked, the earliest of their due times.
type Event struct {
	Queue       int64
	Rows        []Row
	Group       int64
	DeadLetters bool
	Dispatchers bool
	DelayedDue  int64
}

// Payloads of the DeadLetters and Dispatchers events.
const (
	deadLettersPayload = "d"
	dispatchersPayload = "m"
)

// rowsPrefix starts a payload that lists rows (rowsPayload in the wire encoding).
const rowsPrefix = "r"

// delayedPrefix starts a DelayedDue payload: "t" and the due time in Unix ms.
const delayedPrefix = "t"

// MaxRowsPerPayload caps the rows one PUBLISH lists; a larger flush is announced
// by queue id alone and read back by the dispatcher.
const MaxRowsPerPayload = 1000

// rowsPayload is the wire form of a flush's rows: ids as inclusive ranges, creation
// times per row (one value when all rows share it) and tags per row (absent when
// every tag is empty), keys per row (absent when every key is empty) and K, 1 when
// the publisher lists keys (so an absent key list means keyless rows).
type rowsPayload struct {
	Queue     int64            `json:"q"`
	IDs       []delivery.Range `json:"id"`
	CreatedAt []int64          `json:"c"`
	Tags      []string         `json:"t,omitempty"`
	Keys      []string         `json:"k,omitempty"`
	// M, when present, holds every row's body and what else a worker needs to POST
	// it (bodies.go), aligned with the rows.
	M []wireMsg `json:"m,omitempty"`
}

// LocalSink receives a flush's events in the process that committed it. It must
// not block. It reports whether every dispatcher that may own a cursor of those
// queues was reached (the process's dispatcher is the only live one), in which
// case nothing is published on Redis.
type LocalSink func(evs []Event) (alone bool)

// Notifier publishes events on the namespace's channel (delivery.Keys.NotifyChannel),
// with SPUBLISH on a cluster (delivery.Sharded): one node carries them.
type Notifier struct {
	rdb     redis.UniversalClient
	channel string
	sharded bool
	local   LocalSink // receives Published's events first; nil for none
	linger  lingerer  // Published's Redis side (Linger)
}

// New returns a Notifier publishing on keys' notify channel.
func New(rdb redis.UniversalClient, keys delivery.Keys) *Notifier {
	return NewLocal(rdb, keys, nil)
}

// NewLocal returns a Notifier publishing on keys' notify channel whose Published
// hands the events to local first (the dispatcher of this process, in `herald
// all`; see LocalSink); nil local is New.
func NewLocal(rdb redis.UniversalClient, keys delivery.Keys, local LocalSink) *Notifier {
	n := &Notifier{rdb: rdb, channel: keys.NotifyChannel(), sharded: delivery.Sharded(rdb), local: local}
	n.linger.send = n.publishRows
	return n
}

// Queues publishes one notification per queue id, pipelined in one round trip.
func (n *Notifier) Queues(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	pipe := n.rdb.Pipeline()
	for _, id := range ids {
		n.publish(ctx, pipe, strconv.FormatInt(id, 10))
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Published announces a committed flush: one event per queue with its rows in id
// order. The local sink, if any, gets them first; unless it reached every
// dispatcher, they are published on Redis too (rows with their bodies up to
// MaxBodyBytesPerPayload, pipelined in one round trip), at once or, under
// Linger, held for a later flush or a timer (an error of a held send is logged,
// not returned).
func (n *Notifier) Published(ctx context.Context, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	if n.local != nil && n.local(evs) {
		return nil
	}
	evs, hold := n.linger.offer(evs)
	if hold {
		return nil
	}
	return n.publishRows(ctx, evs)
}

// Linger makes Published space its Redis notifications at least every apart
// (lingerer: a flush every after the last notification goes at once with what
// was held, one that follows closer is held, at most 2 × every after the last
// notification), logging the failures of held sends on log; 0 sends every flush
// at once. It is set before the Notifier is used, and returns n.
func (n *Notifier) Linger(every time.Duration, log *slog.Logger) *Notifier {
	n.linger.every, n.linger.log = every, log
	return n
}

// Close publishes what Published holds at once and holds nothing from then on;
// the Notifier stays usable.
func (n *Notifier) Close() { n.linger.close() }

// publishRows publishes one rows payload per event, pipelined in one round trip.
func (n *Notifier) publishRows(ctx context.Context, evs []Event) error {
	pipe := n.rdb.Pipeline()
	for _, ev := range evs {
		n.publish(ctx, pipe, encodeRows(ev))
	}
	_, err := pipe.Exec(ctx)
	return err
}

func encodeRows(ev Event) string {
	if len(ev.Rows) == 0 || len(ev.Rows) > MaxRowsPerPayload {
		return strconv.FormatInt(ev.Queue, 10)
	}
	p := rowsPayload{Queue: ev.Queue}
	ids := make([]int64, len(ev.Rows))
	same, tags, keys := true, false, false
	for i, r := range ev.Rows {
		ids[i] = r.ID
		same = same && r.CreatedAt == ev.Rows[0].CreatedAt
		tags = tags || r.Tag != ""
		keys = keys || r.Key != ""
	}
	if keys {
		p.Keys = make([]string, len(ev.Rows))
		for i, r := range ev.Rows {
			p.Keys[i] = r.Key
		}
	}
	p.IDs = delivery.Ranges(ids)
	if same {
		p.CreatedAt = []int64{ev.Rows[0].CreatedAt}
	} else {
		p.CreatedAt = make([]int64, len(ev.Rows))
		for i, r := range ev.Rows {
			p.CreatedAt[i] = r.CreatedAt
		}
	}
	if tags {
		p.Tags = make([]string, len(ev.Rows))
		for i, r := range ev.Rows {
			p.Tags[i] = r.Tag
		}
	}
	p.M = carriedBodies(ev.Rows)
	b, err := wire.Marshal(p)
	if err != nil {
		return strconv.FormatInt(ev.Queue, 10)
	}
	return rowsPrefix + string(b)
}

// decodeRows parses a rows payload; a malformed one yields the queue alone (or 0),
// which receivers treat as "read the queue".
func decodeRows(s string) Event {
	var p rowsPayload
	if wire.Unmarshal([]byte(s), &p) != nil {
		return Event{Queue: p.Queue}
	}
	ids := delivery.Expand(p.IDs)
	if len(ids) == 0 || len(ids) > MaxRowsPerPayload || (len(p.CreatedAt) != 1 && len(p.CreatedAt) != len(ids)) ||
		(p.Tags != nil && len(p.Tags) != len(ids)) || (p.Keys != nil && len(p.Keys) != len(ids)) {
		return Event{Queue: p.Queue}
	}
	ev := Event{Queue: p.Queue, Rows: make([]Row, len(ids))}
	for i, id := range ids {
		ev.Rows[i] = Row{ID: id, CreatedAt: p.CreatedAt[min(i, len(p.CreatedAt)-1)]}
		if p.Tags != nil {
			ev.Rows[i].Tag = p.Tags[i]
		}
		if p.Keys != nil {
			ev.Rows[i].Key = p.Keys[i]
		}
	}
	attachBodies(&ev, p.M)
	return ev
}

// Group publishes a group-change notification.
func (n *Notifier) Group(ctx context.Context, id int64) error {
	return n.publish(ctx, n.rdb, "g"+strconv.FormatInt(id, 10)).Err()
}

// Groups publishes one group-change notification per id, pipelined in one round trip
// (a dispatcher that released groups tells their new owners).
func (n *Notifier) Groups(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	pipe := n.rdb.Pipeline()
	for _, id := range ids {
		n.publish(ctx, pipe, "g"+strconv.FormatInt(id, 10))
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Dispatchers publishes that the set of live dispatchers changed (a join, a return
// after a possible lapse, a leave).
func (n *Notifier) Dispatchers(ctx context.Context) error {
	return n.publish(ctx, n.rdb, dispatchersPayload).Err()
}

// Delayed publishes that delayed messages were parked, the earliest due at due.
func (n *Notifier) Delayed(ctx context.Context, due time.Time) error {
	return n.publish(ctx, n.rdb, delayedPrefix+strconv.FormatInt(due.UnixMilli(), 10)).Err()
}

// DeadLetters publishes that new dead letters wait for the outbox.
func (n *Notifier) DeadLetters(ctx context.Context) error {
	return n.publish(ctx, n.rdb, deadLettersPayload).Err()
}

// publish sends payload on the notify channel through c (the client or a pipeline).
func (n *Notifier) publish(ctx context.Context, c redis.Cmdable, payload string) *redis.IntCmd {
	return delivery.Publish(ctx, c, n.sharded, n.channel, payload)
}

// Parse decodes one payload of the notify channel.
func Parse(payload string) Event {
	var ev Event
	switch {
	case payload == deadLettersPayload:
		ev.DeadLetters = true
	case payload == dispatchersPayload:
		ev.Dispatchers = true
	case strings.HasPrefix(payload, rowsPrefix):
		ev = decodeRows(payload[len(rowsPrefix):])
	case strings.HasPrefix(payload, delayedPrefix):
		ev.DelayedDue, _ = strconv.ParseInt(payload[len(delayedPrefix):], 10, 64)
	default:
		if g, ok := strings.CutPrefix(payload, "g"); ok {
			ev.Group, _ = strconv.ParseInt(g, 10, 64)
		} else {
			ev.Queue, _ = strconv.ParseInt(payload, 10, 64)
		}
	}
	return ev
}

// Subscribe delivers events to out until ctx ends (delivery.Listen: SSUBSCRIBE on
// a cluster, subscribed again after a refusal or a slot move). Each event waits
// for room in out; the receiver coalesces by its own state, so out may be small.
// refused, if set, is told why a subscription was refused before it is tried
// again.
func Subscribe(ctx context.Context, rdb redis.UniversalClient, keys delivery.Keys, out chan<- Event, refused func(error)) {
	delivery.Listen(ctx, rdb, keys.NotifyChannel(), delivery.Listener{Refused: refused,
		Message: func(payload string) {
			select {
			case out <- Parse(payload):
			case <-ctx.Done():
			}
		}})
}
