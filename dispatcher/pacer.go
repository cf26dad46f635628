package dispatcher

import (
	"math"
	"time"
)

// Pacing constants: the bucket's burst and the slow start after a throttle or the breaker.
const (
	burstWindow      = 100 * time.Millisecond // a group's bucket holds at most this much of its rate
	slowStartDouble  = 2 * time.Second        // slow start doubles the effective rate this often
	throttleFraction = 0.5                    // a throttle restarts the rate at half its current value
	breakerFraction  = 0.1                    // after the breaker closes the rate restarts at 10 %
	minRate          = 1.0                    // messages/s; slow start never starts below this
)

// pacer paces one group's sends: a token bucket at the group's effective rate, and the
// slow start that brings the effective rate back after a throttle or after the
// breaker closes.
//
// The bucket holds at most burstWindow (100 ms) of the rate, or one batch when a batch
// is larger (never more than 1 s of rate), and starts full, so the first message goes
// at once and no 1 s window carries more than rate + burst messages, the first second
// after creation or a pause included (x/time/rate with burst = rate allowed twice the
// rate there). Grants wait until the bucket holds min(want, burst) tokens, so a limited
// group sends about ten jobs a second instead of one per token.
//
// Slow start (TCP's, on messages/s): the rate starts at start when from is reached and
// doubles every slowStartDouble until it reaches target, then the configured rate (or
// no limit) applies again. From 10 % that takes about 7 s, from 50 % 2 s.
//
// Methods take the time from the caller (the dispatcher's Clock). A pacer is not safe
// for concurrent use; the zero value is an unlimited pacer with a batch of 1.
type pacer struct {
	limit  float64 // configured messages/s; 0 = unlimited
	batch  int     // messages per POST: the smallest useful grant
	tokens float64
	filled time.Time // tokens is up to date at this time; no tokens accrue before it

	target  float64   // messages/s slow start climbs back to; 0 = not slowed
	start   float64   // messages/s at from
	from    time.Time // slow start grows from here (the end of a throttle pause)
	lastCut time.Time // the last throttle cut, at most one per second
}

// newPacer returns a pacer for rate (messages/s, 0 = unlimited) and batch (messages per
// POST), with a full bucket at now.
func newPacer(rate, batch int, now time.Time) *pacer {
	p := &pacer{filled: now}
	p.configure(rate, batch, now)
	p.tokens = p.burst(p.effective(now))
	return p
}

// configure applies a changed rate limit or batch size and keeps any slow start.
func (p *pacer) configure(rate, batch int, now time.Time) {
	p.refill(now)
	p.limit, p.batch = float64(max(rate, 0)), max(batch, 1)
	p.tokens = math.Min(p.tokens, p.burst(p.effective(now)))
}

// ceiling is the rate outside slow start: the configured one, or +Inf.
func (p *pacer) ceiling() float64 {
	if p.limit > 0 {
		return p.limit
	}
	return math.Inf(1)
}

// slowRate is slow start's rate at now, ignoring the ceiling.
func (p *pacer) slowRate(now time.Time) float64 {
	if !now.After(p.from) {
		return p.start
	}
	return p.start * math.Exp2(float64(now.Sub(p.from))/float64(slowStartDouble))
}

// effective returns the rate in force at now in messages/s (+Inf when unlimited).
func (p *pacer) effective(now time.Time) float64 {
	if p.target == 0 {
		return p.ceiling()
	}
	r := p.slowRate(now)
	if r >= p.target {
		return p.ceiling()
	}
	return math.Min(r, p.ceiling())
}

// slowed reports the slowed rate at now (messages/s), or 0 once slow start is over,
// ending it. This is the group's effective_rate in stats (0 = the configured rate).
func (p *pacer) slowed(now time.Time) float64 {
	if p.target == 0 {
		return 0
	}
	r := p.effective(now)
	if math.IsInf(r, 1) || (p.limit > 0 && r >= p.limit) || p.slowRate(now) >= p.target {
		p.target = 0
		return 0
	}
	return r
}

// burst is the bucket's size at rate r: burstWindow of it, or one batch if larger,
// at most 1 s of it, at least one message.
func (p *pacer) burst(r float64) float64 {
	if math.IsInf(r, 1) {
		return r
	}
	b := math.Max(r*burstWindow.Seconds(), math.Min(float64(p.batch), r))
	return math.Max(math.Floor(b), 1)
}

// refill brings the bucket up to now and returns the rate and burst in force.
func (p *pacer) refill(now time.Time) (r, b float64) {
	r = p.effective(now)
	b = p.burst(r)
	if math.IsInf(r, 1) {
		p.tokens = 0
		if now.After(p.filled) {
			p.filled = now
		}
		return r, b
	}
	if now.After(p.filled) {
		p.tokens += now.Sub(p.filled).Seconds() * r
		p.filled = now
	}
	p.tokens = math.Min(p.tokens, b)
	return r, b
}

// allow returns how many of want messages may be sent now (all when unlimited), or 0
// until the bucket holds min(want, burst) tokens. It takes nothing: call take with
// what was actually sent.
func (p *pacer) allow(now time.Time, want int) int {
	r, b := p.refill(now)
	if math.IsInf(r, 1) || want <= 0 {
		return max(want, 0)
	}
	if p.tokens < math.Min(float64(want), b) {
		return 0
	}
	return min(want, int(p.tokens))
}

// take spends n tokens.
func (p *pacer) take(n int) {
	if p.limit > 0 || p.target > 0 {
		p.tokens -= float64(n)
	}
}

// next returns when allow(·, want) will next grant something.
func (p *pacer) next(now time.Time, want int) time.Time {
	r, b := p.refill(now)
	if math.IsInf(r, 1) {
		return now
	}
	start := now
	if p.filled.After(now) {
		start = p.filled
	}
	need := math.Min(float64(max(want, 1)), b) - p.tokens
	if need <= 0 {
		return start
	}
	return start.Add(max(time.Duration(need/r*float64(time.Second)), time.Millisecond))
}

// throttle cuts the rate when the endpoint asked to slow down, at most once per second,
// and reports whether it did: slow start restarts from half the rate in force (or half
// the lower of the configured and the measured rate, in messages/s, when the group was
// not slowed) and climbs back to that lower rate, growing only from until, the end of
// the pause; no tokens accrue until then.
func (p *pacer) throttle(now, until time.Time, measured float64) bool {
	if !p.lastCut.IsZero() && now.Sub(p.lastCut) < time.Second && !now.Before(p.lastCut) {
		return false
	}
	p.lastCut = now
	p.slowed(now)
	cur := p.effective(now)
	if p.target == 0 {
		p.target = p.lowerOf(measured)
		cur = math.Min(cur, p.target)
	}
	p.slowStart(math.Max(cur*throttleFraction, minRate), until)
	return true
}

// recoverFrom starts the slow start after the breaker closes: from breakerFraction of
// base (messages/s: the configured rate, or the rate measured before the outage) at
// now, back to base.
func (p *pacer) recoverFrom(now time.Time, base float64) {
	p.target = p.lowerOf(base)
	p.slowStart(math.Max(p.target*breakerFraction, minRate), now)
}

// slowStart restarts the rate at start (messages/s) from from, with a bucket holding
// one burst at that rate and no tokens accruing before from. It lasts at least one
// doubling, so a cut below minRate still shows.
func (p *pacer) slowStart(start float64, from time.Time) {
	p.start, p.from = start, from
	p.target = math.Max(p.target, 2*start)
	p.tokens, p.filled = p.burst(start), from
}

// lowerOf is the lower of the configured rate and measured (messages/s; ≤ 0 = not
// known), at least minRate.
func (p *pacer) lowerOf(measured float64) float64 {
	if p.limit > 0 && (measured <= 0 || p.limit < measured) {
		return p.limit
	}
	return math.Max(measured, minRate)
}
