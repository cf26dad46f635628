package dispatcher

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/models/store"
)

// leaseSlack is how long after a peer's lease should have ended the live set is
// read again, so the database already counts it expired (claims compare with
// NOW(3)) even with the read's own latency.
const leaseSlack = 50 * time.Millisecond

// members is a dispatcher's view of the live dispatchers, which its groups are
// assigned over. The set changes in three ways, each seen without reading it every
// heartbeat: a peer that joins, comes back after a lapse or leaves announces it
// (notify "m", applied at once); a peer that dies stops renewing, so the set is read
// again when the first peer lease seen at the last read ends; and the sweep reads it
// whatever happened (a lost announcement). With no peer there is nothing to expire,
// so an idle single dispatcher reads it only at the sweep.
//
// It also holds this dispatcher's own lease: renew and beat keep it, announce tells
// the others of a change. live, check, next and rearm belong to the loop goroutine;
// alone and lapsed are read and signalled from others.
type members struct {
	id       string
	st       *store.Store
	notifier *notify.Notifier
	cfg      config.Dispatcher
	log      *slog.Logger

	live  []string      // sorted ids, this dispatcher included
	check bool          // read the set at the next step (an announcement, a peer lease ending)
	next  time.Duration // read it again this long after the last read; 0 = no peer
	rearm bool          // next changed since the loop armed its timer
	// alone says this is the only live dispatcher (last read; Notified).
	alone atomic.Bool
	// lapsed is signalled when the lease may have run out between two heartbeats,
	// or the database clock stepped back: the loop rebalances.
	lapsed chan struct{}
}

// read reads the live dispatchers with their leases (one statement) and schedules
// the next read for when the first peer lease ends; it reports whether the set
// changed, and ok=false on a database error (the set is kept).
func (m *members) read(ctx context.Context) (changed, ok bool) {
	leases, err := m.st.Cursors().DispatcherLeases(ctx)
	if err != nil {
		m.log.Warn("list live dispatchers", "err", err)
		return false, false
	}
	live := make([]string, 0, len(leases)+1)
	next := time.Duration(0)
	for _, l := range leases {
		live = append(live, l.ID)
		if l.ID != m.id && (next == 0 || l.Left < next) {
			next = l.Left
		}
	}
	if !slices.Contains(live, m.id) {
		live = append(live, m.id) // its own heartbeat may be late; it still counts itself
		slices.Sort(live)
	}
	if next > 0 {
		next += leaseSlack
	}
	m.next, m.rearm = next, true
	changed = !slices.Equal(live, m.live)
	m.live = live
	m.alone.Store(len(live) == 1) // local notifications then need no Redis copy (Notified)
	return changed, true
}

// announce tells the other dispatchers that the live set changed (this one joined,
// came back after a possible lapse, or left), so they re-read it at once. A lost
// announcement costs at most their sweep.
func (m *members) announce(ctx context.Context) {
	if err := m.notifier.Dispatchers(ctx); err != nil {
		m.log.Warn("announce to the other dispatchers; their sweep covers it", "err", err)
	}
}

// renew renews the lease. When the database clock stepped back since the last
// one, the store re-bases leases and retry due times written on the old clock
// (store.ClockRebase), and the loop is asked to re-read the live set and the retry
// due times (lapsed), which are then nearer than it last heard.
func (m *members) renew(ctx context.Context) error {
	host, _ := os.Hostname()
	stepped, err := m.st.Cursors().DispatcherRenew(ctx, m.id, host, m.cfg.LeaseDuration)
	if stepped {
		m.log.Warn("database clock stepped back; leases and retry due times re-based")
		select {
		case m.lapsed <- struct{}{}:
		default:
		}
	}
	return err
}

// beat renews the lease every HeartbeatInterval until ctx ends, on its own goroutine
// so a slow step of the loop cannot let a short lease lapse. A heartbeat under way
// when ctx ends completes (bounded by the lease) before beat returns. When more than
// LeaseDuration passed between the start of the last successful heartbeat and the
// end of this one, the lease may have lapsed in between and another dispatcher may
// have claimed cursors: beat announces the return and asks the loop for a full
// rebalance (lapsed).
func (m *members) beat(ctx context.Context) {
	t := time.NewTicker(m.cfg.HeartbeatInterval)
	defer t.Stop()
	renewed := time.Now() // no later than the loop's first heartbeat
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			start := time.Now()
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.LeaseDuration)
			err := m.renew(hctx)
			cancel()
			if err != nil {
				m.log.Warn("dispatcher heartbeat", "err", err)
				continue
			}
			if time.Since(renewed) > m.cfg.LeaseDuration {
				m.log.Warn("dispatcher lease may have lapsed; rebalancing", "since_last_heartbeat", time.Since(renewed).Round(time.Millisecond))
				m.announce(ctx)
				select {
				case m.lapsed <- struct{}{}:
				default:
				}
			}
			renewed = start
		}
	}
}
