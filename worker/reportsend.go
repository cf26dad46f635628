package worker

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// reportSenders holds one reportSender per dispatcher (by owner id), created on a
// job's first report to that owner. The zero value is ready to use.
type reportSenders struct {
	mu sync.Mutex
	by map[string]*reportSender
}

// reportSender gathers the reports a worker's jobs send to one dispatcher and sends
// each gathering as one XADD to the owner's report stream (delivery.Keys.Reports): a
// group commit, as a database log writer's, so the number of Redis commands follows
// the sends, not the reports. While a send is under way, what arrives waits for the
// next one; a gathering whose reports are all of unordered jobs lingers first
// (config.Worker.ReportLinger), one with an ordered job's report goes at once, since
// the next message of its key or queue waits for it.
type reportSender struct {
	w     *Worker
	owner string

	mu      sync.Mutex
	next    *reportSend   // the gathering the next send takes
	running bool          // a goroutine is sending; it takes next when it returns
	urgent  chan struct{} // cuts the linger short: an ordered job's report joined
}

// reportSend is one gathering: the reports (each a JSON object); done closes once
// they are in Redis or given up on.
type reportSend struct {
	reports [][]byte
	urgent  bool
	done    chan struct{}
}

// sender returns the reportSender for owner.
func (s *reportSenders) sender(w *Worker, owner string) *reportSender {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string]*reportSender{}
	}
	rs := s.by[owner]
	if rs == nil {
		rs = &reportSender{w: w, owner: owner, urgent: make(chan struct{}, 1)}
		s.by[owner] = rs
	}
	return rs
}

// send queues report (a JSON object) for the owner and returns when that send ended: the report is
// in the owner's stream, or was given up on after reportPushFor. urgent skips the
// linger (a report an ordered group's next message waits for).
func (rs *reportSender) send(report []byte, urgent bool) {
	<-rs.queue(report, urgent)
}

// hurry sends the gathering waiting for the next send without its linger.
func (rs *reportSender) hurry() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.next == nil || rs.next.urgent {
		return
	}
	rs.next.urgent = true
	select {
	case rs.urgent <- struct{}{}:
	default:
	}
}

// queue is send without the wait: it returns a channel closed when the send ended.
func (rs *reportSender) queue(report []byte, urgent bool) <-chan struct{} {
	rs.mu.Lock()
	if rs.next == nil {
		rs.next = &reportSend{done: make(chan struct{})}
	}
	g := rs.next
	g.reports = append(g.reports, report)
	if urgent && !g.urgent {
		g.urgent = true
		select {
		case rs.urgent <- struct{}{}:
		default:
		}
	}
	if !rs.running {
		rs.running = true
		go rs.run()
	}
	rs.mu.Unlock()
	return g.done
}

// run sends gatherings until none waits, then ends (a sender costs no goroutine
// while idle).
func (rs *reportSender) run() {
	for {
		rs.mu.Lock()
		urgent := rs.next != nil && rs.next.urgent
		rs.mu.Unlock()
		if linger := rs.w.cfg.ReportLinger; linger > 0 && !urgent {
			t := time.NewTimer(linger)
			select {
			case <-t.C:
			case <-rs.urgent:
			case <-rs.w.stopping:
			}
			t.Stop()
		}
		rs.mu.Lock()
		g := rs.next
		rs.next = nil
		if g == nil {
			rs.running = false
			rs.mu.Unlock()
			return
		}
		select {
		case <-rs.urgent: // this gathering carries the signal's report
		default:
		}
		rs.mu.Unlock()
		rs.push(g)
		close(g.done)
	}
}

// push writes one gathering: one stream entry whose field "r" holds the reports as
// a JSON array, retried while Redis refuses it (a failover) for up to
// reportPushFor.
func (rs *reportSender) push(g *reportSend) {
	entry := delivery.ReportEntry(g.reports)
	key := rs.w.keys.Reports(rs.owner)
	ctx, cancel := context.WithTimeout(context.Background(), reportPushFor)
	defer cancel()
	for wait := reportPushRetry; ; wait = min(2*wait, time.Second) {
		err := rs.w.rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{delivery.ReportField, entry}}).Err()
		if err == nil {
			return
		}
		select {
		case <-time.After(wait):
			continue
		case <-ctx.Done():
		case <-rs.w.stopping:
		}
		// The dispatcher re-dispatches jobs whose reports never arrive (at their
		// deadline, ≥ JobDeadlineBase): a duplicate, never a loss.
		rs.w.log.Warn("push reports", "owner", rs.owner, "reports", len(g.reports), "err", err)
		return
	}
}
