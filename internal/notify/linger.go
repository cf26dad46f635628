package notify

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// lingerSendTimeout bounds a held notification's PUBLISH.
const lingerSendTimeout = 5 * time.Second

// lingerer spaces the Redis notifications of Published at least every apart, the
// way Nagle's algorithm (RFC 896) holds small segments while one is unacknowledged,
// with time in place of the acknowledgement: a flush that comes every or longer
// after the last notification went out is announced at once, with whatever was
// held; one that follows closer is held, and goes with the next flush past that
// mark or, if none comes, when the mark is every behind (at most 2 × every after
// the last notification). A lone flush waits for nothing; under a steady stream
// the api, the dispatchers and the workers wake once per notification carrying
// several flushes, and the api sends from the flush that is awake anyway instead
// of from a timer of its own. Held events of one queue are joined where the
// payload still carries as much (mergeEvents). The zero every sends everything at
// once.
type lingerer struct {
	every time.Duration
	send  func(ctx context.Context, evs []Event) error
	log   *slog.Logger

	mu      sync.Mutex
	last    time.Time   // when the last send began
	held    []Event     // what waits (mergeEvents)
	timer   *time.Timer // armed while held is not empty
	armed   uint64      // counts the timers armed: a late one finds another's number
	closed  bool        // after close nothing is held
	sending sync.WaitGroup
}

// offer takes a flush's events: hold reports whether they are held for a later
// send; if not, the caller sends out (evs with whatever was held) now, and that
// send counts as the last one.
func (l *lingerer) offer(evs []Event) (out []Event, hold bool) {
	if l.every <= 0 {
		return evs, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.closed || now.Sub(l.last) >= l.every {
		l.last = now
		if len(l.held) == 0 {
			return evs, false
		}
		out, l.held = mergeEvents(l.held, evs), nil
		if l.timer.Stop() {
			l.sending.Done()
		}
		l.timer = nil
		return out, false
	}
	l.held = mergeEvents(l.held, evs)
	if l.timer == nil {
		l.sending.Add(1)
		l.armed++
		n := l.armed
		l.timer = time.AfterFunc(l.last.Add(2*l.every).Sub(now), func() { l.release(n) })
	}
	return nil, true
}

// release sends what was held (the function of timer number n); a timer whose
// events a flush or close already took finds nothing.
func (l *lingerer) release(n uint64) {
	defer l.sending.Done()
	l.mu.Lock()
	if l.timer == nil || l.armed != n {
		l.mu.Unlock()
		return
	}
	evs := l.held
	l.held, l.timer = nil, nil
	if len(evs) > 0 {
		l.last = time.Now()
	}
	l.mu.Unlock()
	l.flush(evs)
}

// flush publishes evs, logging a failure: a lost notification costs the
// dispatchers' fallback poll.
func (l *lingerer) flush(evs []Event) {
	if len(evs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lingerSendTimeout)
	defer cancel()
	if err := l.send(ctx, evs); err != nil && l.log != nil {
		l.log.Warn("notify after publish", "err", err, "queues", len(evs))
	}
}

// close sends what is held at once, waits for a send under way and holds nothing
// from then on.
func (l *lingerer) close() {
	l.mu.Lock()
	l.closed = true
	var evs []Event
	if l.timer != nil && l.timer.Stop() {
		evs, l.held, l.timer = l.held, nil, nil
		l.sending.Done()
	}
	l.mu.Unlock()
	l.flush(evs)
	l.sending.Wait()
}

// mergeEvents adds evs to held, joining the rows of one queue into one event (in
// id order) when the joined event carries as much as the two would apart: at most
// MaxRowsPerPayload rows, and bodies either on both sides and within
// MaxBodyBytesPerPayload together, or on neither (carriedBodies sends all of an
// event's bodies or none). An event without rows (read the queue) absorbs the
// rows of its queue.
func mergeEvents(held, evs []Event) []Event {
next:
	for _, ev := range evs {
		for i := range held {
			h := &held[i]
			if h.Queue != ev.Queue {
				continue
			}
			switch {
			case len(h.Rows) == 0:
			case len(ev.Rows) == 0:
				h.Rows = nil
			case joinable(h.Rows, ev.Rows):
				h.Rows = append(h.Rows, ev.Rows...)
				slices.SortFunc(h.Rows, func(a, b Row) int { return cmp.Compare(a.ID, b.ID) })
			default:
				continue
			}
			continue next
		}
		held = append(held, Event{Queue: ev.Queue, Rows: slices.Clone(ev.Rows)})
	}
	return held
}

// joinable reports whether rows a and b of one queue go as one event without
// losing what either would carry alone (mergeEvents).
func joinable(a, b []Row) bool {
	if len(a)+len(b) > MaxRowsPerPayload {
		return false
	}
	na, ca := carriedBytes(a)
	nb, cb := carriedBytes(b)
	return ca == cb && (!ca || na+nb <= MaxBodyBytesPerPayload)
}
