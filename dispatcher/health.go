package dispatcher

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/fence"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// measureWindow is how many seconds of delivery counts make the measured rate.
const measureWindow = 10

// health is a group's failure counters, breaker and effective rate, kept by its
// owning dispatcher and fed only by worker reports (no Redis write per POST). Its
// fields are always named through their owner: gs.health.x, gs.health.breaker.y.
type health struct {
	breaker       breaker
	minute        time.Time
	succMinute    int
	failMinute    int
	lastStatus    int
	failingSince  time.Time // first failure (or throttle) since the last success
	throttleUntil time.Time
	// preOutage is the delivery rate measured when the breaker opened (messages/s), the
	// base its slow start climbs back to when no rate is configured.
	preOutage float64
	shownRate float64 // the effective rate last saved (messages/s; 0 = the configured rate)
	delivered [measureWindow]struct{ sec, n int64 }
	nextRetry time.Time // earliest time a retry row may be due; zero = check now
	dirty     bool
	// backlogDirty says the retry-topic or dead-letter size may have changed since
	// the last sample (metrics.go).
	backlogDirty bool
	// statsDelivered and statsFailed count messages since the last rollup flush.
	statsDelivered, statsFailed int64
}

// healthKeeper carries out what groups' health asks: it feeds reports into the
// counters and breaker, applies throttles, pauses and disables groups (in MySQL,
// behind the workers' status fence, audited, with an operational event), and
// saves health rows and delivery counts. It runs on the dispatcher's loop.
type healthKeeper struct {
	st     healthStore
	rdb    redis.UniversalClient
	keys   delivery.Keys
	events *opEvents
	log    *slog.Logger
	now    Clock
	// actor is the audit log's actor ("dispatcher:" + the dispatcher's id);
	// disableAfter is config.Dispatcher.DisableAfter.
	actor        string
	disableAfter time.Duration
	// wakeBy asks the loop to run again by t.
	wakeBy func(t time.Time)
}

// healthStore is the part of the store a healthKeeper writes. store.Sides is the
// production implementation.
type healthStore interface {
	GroupHealthSave(ctx context.Context, rows ...store.GroupHealth) error
	StatsAddDeliveries(ctx context.Context, minute time.Time, deltas []store.StatsDelta) error
	GroupSetStatus(ctx context.Context, id int64, st models.GroupStatus, reason string) (int64, error)
	AuditRecord(ctx context.Context, actor, action, target, ip string, before, after any) error
}

var _ healthStore = store.Sides{}

// observe feeds one report into the group's counters, throttle and breaker, and
// carries out what the breaker's transition asks (log, audit, slow start).
func (k *healthKeeper) observe(gs *groupState, r delivery.Report) {
	now := k.now()
	c := r.Counters
	h := &gs.health
	if r.Retry || len(r.RetryWritten) > 0 || len(r.DeadLettered) > 0 {
		h.backlogDirty = true
	}
	if c.Successes+c.Failures+c.Throttles == 0 && !c.Gone {
		return
	}
	h.dirty = true
	gs.post.observe(c)
	if m := now.Truncate(time.Minute); !m.Equal(h.minute) {
		h.minute, h.succMinute, h.failMinute = m, 0, 0
	}
	h.succMinute += c.Successes
	h.failMinute += c.Failures
	h.statsDelivered += int64(c.Delivered)
	h.statsFailed += int64(c.FailedMsgs)
	if c.LastStatus != 0 || c.LastError != "" {
		h.lastStatus, gs.lastError = c.LastStatus, c.LastError
	}
	if c.Delivered > 0 {
		sec := now.Unix()
		slot := &h.delivered[sec%measureWindow]
		if slot.sec != sec {
			slot.sec, slot.n = sec, 0
		}
		slot.n += int64(c.Delivered)
	}
	if c.Successes > 0 {
		h.failingSince = time.Time{}
		if c.TailFailures > 0 {
			h.failingSince = now
		}
	} else if (c.Failures > 0 || c.Throttles > 0) && h.failingSince.IsZero() {
		h.failingSince = now // throttle-only time counts toward disable_after too
	}
	tr := h.breaker.observe(now, c, r.Probe)
	if c.Throttles > 0 {
		k.throttle(gs, now, time.Duration(c.RetryAfterMS)*time.Millisecond)
	}
	if c.Gone {
		k.setStatus(gs, models.GroupPaused, fmt.Sprintf("endpoint answered 410 Gone at %s", now.UTC().Format(time.RFC3339)))
	}
	switch tr {
	case closed:
		k.log.Info("breaker closed after a successful probe", "group", gs.g.Name)
		k.events.send(gs, models.EventBreakerClosed, nil)
		// The probe alone is the last 10 s of deliveries: restart from the configured
		// rate or the rate measured before the outage.
		gs.pace.recoverFrom(now, h.preOutage)
	case probeRefused:
		k.log.Info("breaker probe refused by the endpoint; probing with another message", "group", gs.g.Name, "last_status", c.LastStatus)
	case opened, reopened:
		if tr == opened {
			h.preOutage = gs.measured(now)
		}
		k.log.Warn("breaker opened", "group", gs.g.Name, "cooldown", h.breaker.cooldown, "consecutive", h.breaker.consecutive, "successes_minute", h.succMinute, "failures_minute", h.failMinute, "last_error", gs.lastError)
		k.audit(gs, "group.breaker.open", map[string]any{"cooldown_ms": h.breaker.cooldown.Milliseconds(), "last_error": gs.lastError})
		k.events.send(gs, models.EventBreakerOpened, map[string]any{"cooldown_ms": h.breaker.cooldown.Milliseconds(), "consecutive_failures": h.breaker.consecutive,
			"last_status": h.lastStatus, "last_error": gs.lastError})
	}
}

// throttle pauses the group for retryAfter and cuts its effective rate, at most once
// per second, to half the rate in force (half the lower of the configured rate and
// the rate measured over the last 10 s when not already slowed); slow start brings it
// back from the end of the pause, doubling every 2 s (see pacer).
func (k *healthKeeper) throttle(gs *groupState, now time.Time, retryAfter time.Duration) {
	h := &gs.health
	if until := now.Add(retryAfter); until.After(h.throttleUntil) {
		h.throttleUntil = until
	}
	if gs.pace.throttle(now, h.throttleUntil, gs.measured(now)) {
		k.log.Info("endpoint throttled; rate cut", "group", gs.g.Name, "retry_after", retryAfter, "effective_rate", gs.pace.start)
		k.events.counted(gs, models.EventEndpointThrottled, 1, map[string]any{"retry_after_ms": retryAfter.Milliseconds(), "effective_rate": gs.pace.start})
	}
}

// measured is the delivery rate over the last 10 s in messages/s, over the part of
// the window since the first delivery in it (at least 1 s), so a group that started
// sending 2 s ago is not taken for one sending a fifth as fast.
func (gs *groupState) measured(now time.Time) float64 {
	var n int64
	oldest := now.Unix()
	for _, s := range gs.health.delivered {
		if now.Unix()-s.sec < measureWindow && s.n > 0 {
			n += s.n
			oldest = min(oldest, s.sec)
		}
	}
	return float64(n) / float64(now.Unix()-oldest+1)
}

// mayCut applies the throttle pause and the breaker before any job is cut, moving an
// open breaker to half-open once its cool-down ended.
func (k *healthKeeper) mayCut(gs *groupState, now time.Time) bool {
	h := &gs.health
	if now.Before(h.throttleUntil) {
		k.wakeBy(h.throttleUntil)
		return false
	}
	ok, wake, tr := h.breaker.mayCut(now)
	if !wake.IsZero() {
		k.wakeBy(wake)
	}
	if tr == halfOpened {
		h.dirty = true
		k.log.Info("breaker half-open; sending a probe", "group", gs.g.Name)
	}
	return ok
}

// tick publishes effective rates, auto-pauses groups failing past DisableAfter,
// saves changed health rows and adds delivered/failed counts to the per-minute
// rollup: one multi-row statement each for all groups, none when nothing changed.
func (k *healthKeeper) tick(ctx context.Context, groups map[int64]*groupState) {
	now := k.now()
	var saves []store.GroupHealth
	var saved []*groupState
	var deltas []store.StatsDelta
	var counted []*groupState
	for _, gs := range groups {
		h := &gs.health
		if r := gs.pace.slowed(now); r != h.shownRate {
			h.shownRate, h.dirty = r, true
		}
		if gs.g.Status == models.GroupRunning && !h.failingSince.IsZero() && now.Sub(h.failingSince) >= k.disableAfter {
			k.setStatus(gs, models.GroupDisabled, fmt.Sprintf("auto-paused: failing without a success since %s", h.failingSince.UTC().Format(time.RFC3339)))
		}
		if h.dirty {
			h.dirty = false
			saves, saved = append(saves, gs.snapshot()), append(saved, gs)
		}
		if h.statsDelivered+h.statsFailed > 0 {
			deltas = append(deltas, store.StatsDelta{GroupID: gs.g.ID, Delivered: h.statsDelivered, Failed: h.statsFailed})
			counted = append(counted, gs)
		}
	}
	if len(saves) > 0 {
		if err := k.st.GroupHealthSave(ctx, saves...); err != nil {
			k.log.Warn("save group health", "groups", len(saves), "err", err)
			for _, gs := range saved {
				gs.health.dirty = true // saved again at the next tick
			}
		}
	}
	if len(deltas) > 0 {
		// One row per group per flush into the console's per-minute rollup.
		if err := k.st.StatsAddDeliveries(ctx, now.UTC().Truncate(time.Minute), deltas); err != nil {
			k.log.Warn("stats rollup", "groups", len(deltas), "err", err)
			return // kept, added at the next tick
		}
		for i, gs := range counted {
			gs.health.statsDelivered -= deltas[i].Delivered
			gs.health.statsFailed -= deltas[i].Failed
		}
	}
}

func (gs *groupState) snapshot() store.GroupHealth {
	h := gs.health
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	state := h.breaker.state
	if state == "" {
		state = breakerClosed
	}
	return store.GroupHealth{GroupID: gs.g.ID, ConsecutiveFailures: h.breaker.consecutive, BreakerState: state, BreakerOpenUntil: opt(h.breaker.openUntil),
		BreakerCooldownMS: h.breaker.cooldown.Milliseconds(), EffectiveRate: h.shownRate, LastStatus: h.lastStatus, LastError: gs.lastError,
		LastSuccessAt: opt(h.breaker.lastSuccess), FailingSince: opt(h.failingSince), ThrottledUntil: opt(h.throttleUntil),
		SuccessesMinute: h.succMinute, FailuresMinute: h.failMinute}
}

// setStatus pauses or disables a group with a reason, in the database and locally,
// and audits it.
func (k *healthKeeper) setStatus(gs *groupState, st models.GroupStatus, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cv, err := k.st.GroupSetStatus(ctx, gs.g.ID, st, reason)
	if err != nil {
		k.log.Warn("set group status", "group", gs.g.Name, "err", err)
		return
	}
	// Workers stop the group's POSTs at once, as for a pause through the api.
	if err := fence.RaiseStatus(ctx, k.rdb, k.keys, gs.g.ID, cv, true); err != nil {
		k.log.Warn("raise status fence; workers stop within their group cache", "group", gs.g.Name, "err", err)
	}
	gs.g.Status, gs.g.PausedReason = st, reason
	k.log.Warn("group status changed", "group", gs.g.Name, "status", st, "reason", reason)
	k.audit(gs, "group."+string(st), map[string]any{"reason": reason})
	typ := models.EventGroupPaused
	if st == models.GroupDisabled {
		typ = models.EventGroupDisabled
	}
	k.events.send(gs, typ, map[string]any{"reason": reason, "by": "herald"})
}

// audit records action on gs's group by this dispatcher.
func (k *healthKeeper) audit(gs *groupState, action string, after any) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.st.AuditRecord(ctx, k.actor, action, gs.g.Name, "", nil, after); err != nil {
		k.log.Warn("audit", "action", action, "err", err)
	}
}

// retryDueBy notes that a retry row may be due at t (and so that the retry topic
// changed, for the backlog sample).
func (h *health) retryDueBy(t time.Time) {
	h.backlogDirty = true
	if h.nextRetry.IsZero() || t.Before(h.nextRetry) {
		h.nextRetry = t
	}
}
