package dispatcher

import "time"

// ownRetry is ownership work to do again later: a full rebalance or group reloads
// that failed on a database error, and groups with a cursor another dispatcher
// still holds (it releases it once it learns of this one). The delay doubles from
// HeartbeatInterval up to RebalanceInterval while attempts keep failing.
type ownRetry struct {
	full   bool
	groups map[int64]bool
	at     time.Time
	delay  time.Duration
}

// retryLater schedules a full rebalance (full) or the reload of groups after the
// current back-off.
func (d *Dispatcher) retryLater(full bool, groups ...int64) {
	r := &d.retry
	if r.groups == nil {
		r.groups = map[int64]bool{}
	}
	r.full = r.full || full
	for _, g := range groups {
		r.groups[g] = true
	}
	if r.at.IsZero() {
		r.delay = min(max(2*r.delay, d.cfg.HeartbeatInterval), d.cfg.RebalanceInterval)
		r.at = d.now().Add(r.delay)
	}
}

// takeRetries moves due retries into this step's work and reports whether it did;
// it keeps the loop awake for those still waiting.
func (d *Dispatcher) takeRetries() bool {
	r := &d.retry
	if r.at.IsZero() {
		return false
	}
	if d.now().Before(r.at) {
		d.wakeBy(r.at)
		return false
	}
	d.refresh = d.refresh || r.full
	for g := range r.groups {
		d.reload[g] = true
	}
	r.full, r.at = false, time.Time{}
	clear(r.groups)
	return true
}
