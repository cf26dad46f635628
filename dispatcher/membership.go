package dispatcher

import (
	"context"
	"os"
	"slices"
	"time"
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
type members struct {
	live  []string      // sorted ids, this dispatcher included
	check bool          // read the set at the next step (an announcement, a peer lease ending)
	next  time.Duration // read it again this long after the last read; 0 = no peer
	rearm bool          // next changed since the loop armed its timer
}

// readMembers reads the live dispatchers with their leases (one statement) into
// d.members and schedules the next read for when the first peer lease ends; it
// reports whether the set changed, and ok=false on a database error (the set is
// kept).
func (d *Dispatcher) readMembers(ctx context.Context) (changed, ok bool) {
	leases, err := d.st.DispatcherLeases(ctx)
	if err != nil {
		d.log.Warn("list live dispatchers", "err", err)
		return false, false
	}
	live := make([]string, 0, len(leases)+1)
	next := time.Duration(0)
	for _, l := range leases {
		live = append(live, l.ID)
		if l.ID != d.id && (next == 0 || l.Left < next) {
			next = l.Left
		}
	}
	if !slices.Contains(live, d.id) {
		live = append(live, d.id) // its own heartbeat may be late; it still counts itself
		slices.Sort(live)
	}
	if next > 0 {
		next += leaseSlack
	}
	d.members.next, d.members.rearm = next, true
	changed = !slices.Equal(live, d.members.live)
	d.members.live = live
	d.alone.Store(len(live) == 1) // local notifications then need no Redis copy (Notified)
	return changed, true
}

// announce tells the other dispatchers that the live set changed (this one joined,
// came back after a possible lapse, or left), so they re-read it at once. A lost
// announcement costs at most their sweep.
func (d *Dispatcher) announce(ctx context.Context) {
	if err := d.notifier.Dispatchers(ctx); err != nil {
		d.log.Warn("announce to the other dispatchers; their sweep covers it", "err", err)
	}
}

// heartbeat renews the lease. When the database clock stepped back since the last
// one, the store re-bases leases and retry due times written on the old clock
// (store.ClockRebase), and the loop is asked to re-read the live set and the retry
// due times (d.lapsed), which are then nearer than it last heard.
func (d *Dispatcher) heartbeat(ctx context.Context) error {
	host, _ := os.Hostname()
	stepped, err := d.st.DispatcherRenew(ctx, d.id, host, d.cfg.LeaseDuration)
	if stepped {
		d.log.Warn("database clock stepped back; leases and retry due times re-based")
		select {
		case d.lapsed <- struct{}{}:
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
// rebalance (d.lapsed).
func (d *Dispatcher) beat(ctx context.Context) {
	t := time.NewTicker(d.cfg.HeartbeatInterval)
	defer t.Stop()
	renewed := time.Now() // no later than the loop's first heartbeat
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			start := time.Now()
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.LeaseDuration)
			err := d.heartbeat(hctx)
			cancel()
			if err != nil {
				d.log.Warn("dispatcher heartbeat", "err", err)
				continue
			}
			if time.Since(renewed) > d.cfg.LeaseDuration {
				d.log.Warn("dispatcher lease may have lapsed; rebalancing", "since_last_heartbeat", time.Since(renewed).Round(time.Millisecond))
				d.announce(ctx)
				select {
				case d.lapsed <- struct{}{}:
				default:
				}
			}
			renewed = start
		}
	}
}
