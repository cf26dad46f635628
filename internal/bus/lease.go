package bus

import (
	"context"
	"sync/atomic"
	"time"
)

// LeaseLimit is how long after a worker's last announce in Keys.Workers went
// through it still sends the jobs it holds: half a WorkerRefresh short of
// WorkerLapse, after which dispatchers count it dead and send its pushed jobs
// again elsewhere.
const LeaseLimit = WorkerLapse - WorkerRefresh/2

// lease is a Redis source's hold on the jobs it took while it takes pushes: a
// dispatcher counts a worker live while its entry keeps changing, and re-dispatches
// its jobs once the entry lapsed (WorkerLapse), so a worker whose announces stopped
// going through (the process stopped: SIGSTOP, a VM freeze, a long pause; or Redis
// refused them) for LeaseLimit must not send what it held then: those jobs may
// already run elsewhere. The announce renews the lease; an announce that finds
// the previous one LeaseLimit or more ago starts a new epoch, and a job taken in an
// earlier epoch is lapsed for good, even once announces go through again. Both
// are read before every POST (Lapsed), without a Redis command.
type lease struct {
	clock   func() time.Duration // monotonic time since the lease began
	renewed atomic.Int64         // clock() at the last announce that went through, ns
	epoch   atomic.Int64
	// quarantine is clock() until which a job taken is lapsed from the start: pushes
	// sent before the lapse may still wait in the connection when the first announce
	// after it goes through, and the dispatchers sent those jobs elsewhere.
	quarantine atomic.Int64
}

// leaseQuarantine is how long after a lapse jobs taken are lapsed from the start
// (lease.quarantine): ample to read what waited in the connection. A job pushed
// meanwhile goes back unsent and is sent again.
const leaseQuarantine = time.Second

func newLease() *lease {
	start := time.Now()
	return &lease{clock: func() time.Duration { return time.Since(start) }}
}

// renew records an announce that went through, starting a new epoch (and its
// quarantine) when the previous one is LeaseLimit or more ago. The epoch moves
// before renewed, so a reader never sees a fresh renewal with the old epoch.
func (l *lease) renew() {
	now := int64(l.clock())
	if now-l.renewed.Load() >= int64(LeaseLimit) {
		l.quarantine.Store(now + int64(leaseQuarantine))
		l.epoch.Add(1)
	}
	l.renewed.Store(now)
}

// holds reports whether a job taken in epoch may still be sent.
func (l *lease) holds(epoch int64) bool {
	return l.epoch.Load() == epoch && int64(l.clock())-l.renewed.Load() < int64(LeaseLimit)
}

// heldKey is the context key of a job's hold (withHold).
type heldKey struct{}

// hold is a job's place under a lease: the epoch it was taken in.
type hold struct {
	l     *lease
	epoch int64
}

// withHold returns ctx carrying the hold of a job taken now under l (nil: none).
func withHold(ctx context.Context, h *hold) context.Context {
	if h == nil {
		return ctx
	}
	return context.WithValue(ctx, heldKey{}, h)
}

// take is the hold of a job taken now, or nil without a lease.
func (l *lease) take() *hold {
	if l == nil {
		return nil
	}
	if int64(l.clock()) < l.quarantine.Load() {
		return &hold{l: l, epoch: -1} // never the lease's epoch: lapsed from the start
	}
	return &hold{l: l, epoch: l.epoch.Load()}
}

// Lapsed reports whether the worker may no longer send the job that ctx (the one
// RunJob got) runs: its source's lease on it ended (lease), so a dispatcher may
// already have sent it again elsewhere. The worker then returns the job's unsent
// messages instead of POSTing them. Always false on the in-process bus and for a
// worker that takes no pushes.
func Lapsed(ctx context.Context) bool {
	h, _ := ctx.Value(heldKey{}).(*hold)
	return h != nil && !h.l.holds(h.epoch)
}
