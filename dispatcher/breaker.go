package dispatcher

import (
	"time"

	"github.com/heraldhq/herald/internal/delivery"
)

// Breaker states, as saved in group_health.breaker_state. The zero state ("") is
// closed.
const (
	breakerClosed   = "closed"    // jobs are cut as usual
	breakerOpen     = "open"      // nothing is cut until the cool-down ends
	breakerHalfOpen = "half_open" // one probe batch is cut; its outcome closes or reopens
)

// Breaker thresholds.
const (
	breakerConsecutive = 10              // consecutive failed POSTs that open the breaker
	breakerMinRequests = 20              // POSTs in a minute (since the breaker closed) before the failure ratio counts
	breakerMinCooldown = 5 * time.Second // first cool-down; doubles on every failed probe
	breakerMaxCooldown = 5 * time.Minute // longest cool-down
	streakQuiet        = time.Second     // no success for this long before a failure streak opens the breaker
	// breakerProbes is how many probes, each of another message, a half-open breaker
	// sends while the endpoint refuses them with an HTTP answer (refusedByAnswer)
	// before it reopens: an endpoint that answers is up, and what it refused may be
	// the message (a poison key). A probe that got no answer, or 502–504, reopens at
	// once.
	breakerProbes = 3
)

// transition is what one breaker call changed; the dispatcher loop logs, audits and
// adjusts the rate on it.
type transition int

const (
	noTransition transition = iota
	opened                  // closed → open: a new outage (cool-down 5 s)
	reopened                // half-open → open: the probe failed (cool-down doubled, at most 5 min)
	halfOpened              // open → half-open: the cool-down ended; one probe may be cut
	closed                  // half-open → closed: the probe succeeded
	probeRefused            // half-open stays: the endpoint refused the probe with an answer; another message is probed
)

// breaker is one group's circuit breaker, a pure state machine over the POST counts
// in worker reports; every method takes the time it decides by, so it needs no clock.
//
// Closed, it opens on either rule: breakerConsecutive failed POSTs in a row with no
// success reported for streakQuiet (reports of parallel jobs interleave, so a streak
// counts only once successes stop arriving), or more than half of at least
// breakerMinRequests POSTs failing within the current minute, counted since the
// breaker last closed (the failures that opened it cannot reopen it a few successes
// into the recovery) and leaving out repeated failures (Counters.Repeats: messages
// that failed before, such as a blocked key retried in place, would otherwise
// open it on an endpoint that refuses only them). Open, it admits nothing until
// openUntil, then turns half-open and admits one probe batch (probing is set while
// it is in flight). A probe with
// successes and no failures closes it and resets the cool-down; a probe with a
// failure reopens it with the cool-down doubled, from 5 s up to 5 min; a probe with
// only throttles leaves it half-open.
type breaker struct {
	state       string
	openUntil   time.Time
	cooldown    time.Duration // the cool-down in force; 0 once closed
	probing     bool          // a probe job is in flight (set by the cut, cleared when the job finishes)
	refused     int           // probes of this half-open spell the endpoint refused with an answer
	consecutive int           // failed POSTs since the last success (a success's trailing failures count)
	lastSuccess time.Time
	// ratioMinute, ratioSucc and ratioFail count POSTs for the failure-ratio rule:
	// this minute, since the breaker last closed.
	ratioMinute          time.Time
	ratioSucc, ratioFail int
}

// isClosed reports whether the breaker lets jobs through without a probe.
func (b *breaker) isClosed() bool { return b.state == "" || b.state == breakerClosed }

// observe feeds one report's POST counts, received at now, and reports the
// transition it caused. probe marks the report of a probe job.
func (b *breaker) observe(now time.Time, c delivery.Counters, probe bool) transition {
	if m := now.Truncate(time.Minute); !m.Equal(b.ratioMinute) {
		b.ratioMinute, b.ratioSucc, b.ratioFail = m, 0, 0
	}
	b.ratioSucc += c.Successes
	b.ratioFail += c.Failures - c.Repeats
	if c.Successes > 0 {
		b.consecutive = c.TailFailures
		b.lastSuccess = now
	} else {
		b.consecutive += c.Failures
	}
	if probe {
		switch {
		case c.Successes > 0 && c.Failures == 0:
			b.state, b.cooldown, b.refused = breakerClosed, 0, 0
			b.ratioSucc, b.ratioFail = 0, 0
			return closed
		case c.Failures > 0 && refusedByAnswer(c) && b.refused+1 < breakerProbes:
			b.refused++
			return probeRefused
		case c.Failures > 0:
			return b.open(now)
		}
		return noTransition
	}
	if !b.isClosed() {
		return noTransition
	}
	total := b.ratioSucc + b.ratioFail
	streak := b.consecutive >= breakerConsecutive && now.Sub(b.lastSuccess) >= streakQuiet
	if streak || (total >= breakerMinRequests && 2*b.ratioFail > total) {
		return b.open(now)
	}
	return noTransition
}

// open opens the breaker at now: for breakerMinCooldown on a new outage, for twice
// the last cool-down (at most breakerMaxCooldown) when a probe failed.
func (b *breaker) open(now time.Time) transition {
	tr := reopened
	if b.isClosed() {
		tr = opened
	}
	if b.cooldown == 0 {
		b.cooldown = breakerMinCooldown
	} else if !b.isClosed() {
		b.cooldown = min(2*b.cooldown, breakerMaxCooldown)
	}
	b.state, b.openUntil, b.refused = breakerOpen, now.Add(b.cooldown), 0
	return tr
}

// refusedByAnswer reports whether c's last failure was an HTTP answer that does not
// say the endpoint is down: any 4xx or 5xx status but 502, 503 and 504 (a gateway
// or platform without a healthy backend). 429 is a throttle, never a failure.
func refusedByAnswer(c delivery.Counters) bool {
	switch s := c.LastStatus; {
	case s == 502 || s == 503 || s == 504:
		return false
	default:
		return s >= 400 && s <= 599
	}
}

// mayCut reports whether jobs may be cut at now. An open breaker whose cool-down
// ended turns half-open (transition halfOpened) and admits its probe; a half-open one
// admits nothing while its probe is in flight. When it refuses until a known time,
// wake is that time.
func (b *breaker) mayCut(now time.Time) (ok bool, wake time.Time, tr transition) {
	switch b.state {
	case breakerOpen:
		if now.Before(b.openUntil) {
			return false, b.openUntil, noTransition
		}
		b.state = breakerHalfOpen
		return true, time.Time{}, halfOpened
	case breakerHalfOpen:
		return !b.probing, time.Time{}, noTransition
	}
	return true, time.Time{}, noTransition
}
