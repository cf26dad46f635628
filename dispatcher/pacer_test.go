package dispatcher

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sendAll drives p like the loop does: at each tick it sends what allow grants
// (want at most jobSize) and returns how many messages each second carried.
func sendAll(p *pacer, start time.Time, d, tick time.Duration, jobSize int) []int {
	perSec := make([]int, int(d/time.Second))
	for at := time.Duration(0); at < d; at += tick {
		now := start.Add(at)
		for {
			n := p.allow(now, jobSize)
			if n == 0 {
				break
			}
			p.take(n)
			perSec[int(at/time.Second)] += n
		}
	}
	return perSec
}

// TestPacerBurst: no second carries more than about the rate, the first one after
// creation included, and grants are about 100 ms of rate, not one token each.
func TestPacerBurst(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name              string
		rate, batch, want int
		maxPerSec         int
		minGrant          int
	}{
		{"rate 50", 50, 1, 100, 55, 5},
		{"rate 10", 10, 1, 100, 11, 1},
		{"rate 1000", 1000, 1, 100, 1100, 100},
		{"rate 20 batch 10", 20, 10, 100, 30, 10},
		{"rate 5 batch 10", 5, 10, 100, 10, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPacer(tc.rate, tc.batch, t0)
			per := sendAll(p, t0, 5*time.Second, time.Millisecond, tc.want)
			for i, n := range per {
				require.LessOrEqual(t, n, tc.maxPerSec, "second %d", i)
				if i > 0 {
					require.GreaterOrEqual(t, n, tc.rate*9/10, "second %d keeps the rate", i)
				}
			}
			p2 := newPacer(tc.rate, tc.batch, t0)
			now := t0
			for p2.allow(now, tc.want) == 0 {
				now = p2.next(now, tc.want)
			}
			require.GreaterOrEqual(t, p2.allow(now, tc.want), tc.minGrant, "one grant")
		})
	}
}

// TestPacerUnlimited: an unlimited pacer grants everything and needs no tokens.
func TestPacerUnlimited(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_000_000, 0)
	p := newPacer(0, 1, t0)
	require.Equal(t, 100, p.allow(t0, 100))
	p.take(100)
	require.Equal(t, 100, p.allow(t0, 100))
	require.Zero(t, p.slowed(t0))
}

// TestPacerSlowStart: after a throttle or the breaker closing, the rate climbs back
// to the previous one within about 20 s, growing only once the pause ended.
func TestPacerSlowStart(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name     string
		rate     int     // configured, 0 = unlimited
		measured float64 // before the outage
		breaker  bool    // breaker closed (else a throttle with a 1 s pause)
		start    float64 // rate right after
		back     time.Duration
	}{
		{"throttle unlimited", 0, 400, false, 200, 3 * time.Second},
		{"throttle limited 50", 50, 50, false, 25, 3 * time.Second},
		{"throttle limited, lower measured", 100, 30, false, 15, 3 * time.Second},
		{"throttle at tiny measured rate", 100, 0.2, false, 1, 3 * time.Second},
		{"breaker rate 20", 20, 0, true, 2, 7 * time.Second},
		{"breaker unlimited, measured 1000", 0, 1000, true, 100, 7 * time.Second},
		{"breaker unlimited, nothing measured", 0, 0, true, 1, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPacer(tc.rate, 1, t0)
			from := t0
			if tc.breaker {
				base := tc.measured
				if tc.rate > 0 {
					base = float64(tc.rate)
				}
				p.recoverFrom(t0, base)
			} else {
				from = t0.Add(time.Second)
				require.True(t, p.throttle(t0, from, tc.measured))
				require.False(t, p.throttle(t0.Add(500*time.Millisecond), from, tc.measured), "at most one cut a second")
				require.InDelta(t, tc.start, p.effective(from.Add(-time.Millisecond)), 0.01, "no growth during the pause")
			}
			require.InDelta(t, tc.start, p.effective(from), 0.01)
			require.InDelta(t, tc.start, p.slowed(from), 0.01, "shown as the effective rate")
			require.InDelta(t, 2*tc.start, math.Min(p.effective(from.Add(2*time.Second)), 2*tc.start), 0.01, "doubles in 2 s")
			end := from.Add(tc.back)
			require.Equal(t, p.ceiling(), p.effective(end), "back to the configured rate (or none)")
			require.Zero(t, p.slowed(end))
			require.LessOrEqual(t, tc.back, 20*time.Second)
		})
	}
}

// TestPacerThrottleTwice: a second throttle a second later halves the slowed rate
// again and keeps the rate to climb back to.
func TestPacerThrottleTwice(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_000_000, 0)
	p := newPacer(0, 1, t0)
	require.True(t, p.throttle(t0, t0.Add(time.Second), 400))
	t1 := t0.Add(time.Second)
	require.True(t, p.throttle(t1, t1.Add(time.Second), 10))
	require.InDelta(t, 100, p.effective(t1.Add(time.Second)), 0.01)
	require.InDelta(t, 400, p.target, 0.01)
	require.True(t, math.IsInf(p.effective(t1.Add(6*time.Second)), 1))
}

// TestPacerAfterPause: no tokens accrue during a pause, and the first second after it
// carries no more than the slowed rate plus one burst.
func TestPacerAfterPause(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_000_000, 0)
	p := newPacer(50, 1, t0)
	sendAll(p, t0, 2*time.Second, time.Millisecond, 100)
	until := t0.Add(5 * time.Second)
	p.throttle(t0.Add(2*time.Second), until, 50)
	require.Equal(t, 2, p.allow(until.Add(-time.Millisecond), 100), "one burst at 25 msg/s, nothing accrued")
	per := sendAll(p, until, time.Second, time.Millisecond, 100)
	require.LessOrEqual(t, per[0], 30+2, "25 msg/s doubling every 2 s (30 in the first second), plus one burst")
	require.GreaterOrEqual(t, per[0], 25)
}

// TestMeasuredRate: the measured rate divides by the part of the 10 s window since its
// first delivery, at least 1 s.
func TestMeasuredRate(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 500_000_000)
	for _, tc := range []struct {
		name  string
		slots map[int64]int64 // seconds before now → messages delivered
		want  float64
	}{
		{"nothing", nil, 0},
		{"this second only", map[int64]int64{0: 40}, 40},
		{"two seconds", map[int64]int64{0: 40, 1: 60}, 50},
		{"full window", map[int64]int64{0: 10, 9: 90}, 10},
		{"older than the window", map[int64]int64{0: 10, 12: 500}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gs := &groupState{}
			for ago, n := range tc.slots {
				sec := now.Unix() - ago
				gs.health.delivered[sec%measureWindow] = struct{ sec, n int64 }{sec, n}
			}
			require.InDelta(t, tc.want, gs.measured(now), 0.001)
		})
	}
}
