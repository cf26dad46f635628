package bus

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// ReportSenders is a worker's end of the report streams: it gathers the reports its
// jobs send to one dispatcher and sends each gathering as one XADD to that owner's
// stream (delivery.Keys.Reports), a group commit, as a database log writer's, so
// the number of Redis commands follows the sends, not the reports. While a send is
// under way, what arrives waits for the next one; a gathering whose reports are all
// of unordered jobs lingers first (Linger), one with an ordered job's report goes at
// once, since the next message of its key or queue waits for it. Create it with
// NewReportSenders; safe for concurrent use.
type ReportSenders struct {
	rdb    redis.UniversalClient
	keys   delivery.Keys
	linger time.Duration
	stop   <-chan struct{} // closed when the worker stops: no more lingering, no more retries
	log    *slog.Logger

	mu sync.Mutex
	by map[string]*reportSender
}

// NewReportSenders returns the report senders of a worker on rdb; linger is
// config.Worker.ReportLinger, stop is closed when the worker stops.
func NewReportSenders(rdb redis.UniversalClient, keys delivery.Keys, linger time.Duration, stop <-chan struct{}, log *slog.Logger) *ReportSenders {
	return &ReportSenders{rdb: rdb, keys: keys, linger: linger, stop: stop, log: log}
}

// reportSender gathers the reports to one dispatcher (ReportSenders).
type reportSender struct {
	s     *ReportSenders
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
func (s *ReportSenders) sender(owner string) *reportSender {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string]*reportSender{}
	}
	rs := s.by[owner]
	if rs == nil {
		rs = &reportSender{s: s, owner: owner, urgent: make(chan struct{}, 1)}
		s.by[owner] = rs
	}
	return rs
}

// Send queues report (a JSON object) for owner and returns when that send ended:
// the report is in the owner's stream, or was given up on after reportPushFor.
// urgent skips the linger (a report an ordered group's next message waits for).
func (s *ReportSenders) Send(owner string, report []byte, urgent bool) {
	<-s.sender(owner).queue(report, urgent)
}

// Queue is Send without the wait: it returns a channel closed when the send ended.
// Sends to one owner end in queue order.
func (s *ReportSenders) Queue(owner string, report []byte, urgent bool) <-chan struct{} {
	return s.sender(owner).queue(report, urgent)
}

// Hurry sends the gathering waiting for owner's next send without its linger.
func (s *ReportSenders) Hurry(owner string) { s.sender(owner).hurry() }

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

// queue queues report and returns a channel closed when its send ended.
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
		if linger := rs.s.linger; linger > 0 && !urgent {
			t := time.NewTimer(linger)
			select {
			case <-t.C:
			case <-rs.urgent:
			case <-rs.s.stop:
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

// reportPushFor is how long a worker keeps trying to push a report while Redis
// refuses it (a failover under way: a cluster promotes a replica within about
// twice cluster-node-timeout, Sentinel within down-after-milliseconds plus its
// election). A report given up on costs the job's messages a repeat at the
// dispatcher's deadline (≥ JobDeadlineBase, 40 s), so a failover that outlasted
// one push turned a 4 s takeover into a 40 s one. A push that failed after Redis
// took it may arrive twice: its offsets are done once, its counters (metrics)
// count twice.
const reportPushFor = 15 * time.Second

// reportPushRetry is the first pause between report sends; it doubles up to 1 s.
const reportPushRetry = 50 * time.Millisecond

// push writes one gathering: one stream entry whose field "r" holds the reports as
// a JSON array, retried while Redis refuses it (a failover) for up to
// reportPushFor.
func (rs *reportSender) push(g *reportSend) {
	entry := delivery.ReportEntry(g.reports)
	key := rs.s.keys.Reports(rs.owner)
	ctx, cancel := context.WithTimeout(context.Background(), reportPushFor)
	defer cancel()
	for wait := reportPushRetry; ; wait = min(2*wait, time.Second) {
		err := rs.s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{delivery.ReportField, entry}}).Err()
		if err == nil {
			return
		}
		select {
		case <-time.After(wait):
			continue
		case <-ctx.Done():
		case <-rs.s.stop:
		}
		// The dispatcher re-dispatches jobs whose reports never arrive (at their
		// deadline, ≥ JobDeadlineBase): a duplicate, never a loss.
		rs.s.log.Warn("push reports", "owner", rs.owner, "reports", len(g.reports), "err", err)
		return
	}
}
