package dispatcher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
)

// step is one call on a breaker in a table case: a report's counters fed to observe,
// or (cut) a mayCut call, at the given time after the case's start.
type step struct {
	at     time.Duration
	cut    bool
	probe  bool
	c      delivery.Counters
	want   transition
	wantOK bool          // mayCut only: jobs may be cut
	wake   time.Duration // mayCut only: wake time after the start (0 = none)
	// inFlight sets probing before the call, as the cut does once it sent the probe.
	inFlight bool
}

func fails(n int) delivery.Counters { return delivery.Counters{Failures: n} }
func succs(n int) delivery.Counters { return delivery.Counters{Successes: n} }

// refusedBy is one failed POST the endpoint answered with status.
func refusedBy(status int) delivery.Counters {
	return delivery.Counters{Failures: 1, LastStatus: status}
}

// openAt is the step that opens a closed breaker at t0+at by a failure streak.
func openAt(at time.Duration) step { return step{at: at, c: fails(breakerConsecutive), want: opened} }

// TestBreakerTransitions drives a breaker through every transition with an injected
// time and checks each returned transition, each mayCut verdict and the end state.
func TestBreakerTransitions(t *testing.T) {
	t.Parallel()
	sec := time.Second
	cases := []struct {
		name      string
		steps     []step
		state     string
		cooldown  time.Duration
		openUntil time.Duration // after the start; checked when the state is open
	}{
		{name: "nine failures stay closed", steps: []step{{c: fails(9)}}, state: ""},
		{name: "ten failures open", steps: []step{{c: fails(4)}, {at: 10, c: fails(6), want: opened}},
			state: breakerOpen, cooldown: 5 * sec, openUntil: 5*sec + 10},
		{name: "streak within a second of a success waits", steps: []step{
			{c: succs(1)}, {at: 500 * time.Millisecond, c: fails(10)},
			{at: 1100 * time.Millisecond, c: fails(1), want: opened},
		}, state: breakerOpen, cooldown: 5 * sec, openUntil: 1100*time.Millisecond + 5*sec},
		{name: "a success's tail failures start the streak", steps: []step{
			{c: delivery.Counters{Successes: 1, Failures: 8, TailFailures: 8}},
			{at: 2 * sec, c: fails(2), want: opened},
		}, state: breakerOpen, cooldown: 5 * sec, openUntil: 7 * sec},
		{name: "a success resets the streak", steps: []step{
			{c: fails(9)}, {at: 10, c: succs(1)}, {at: 2 * sec, c: fails(9)},
		}, state: ""},
		{name: "over half of 20 fail opens", steps: []step{
			{c: delivery.Counters{Successes: 9, Failures: 11}, want: opened},
		}, state: breakerOpen, cooldown: 5 * sec, openUntil: 5 * sec},
		{name: "exactly half of 20 stays closed", steps: []step{
			{c: delivery.Counters{Successes: 10, Failures: 10}},
		}, state: ""},
		{name: "under 20 requests stays closed", steps: []step{
			{c: delivery.Counters{Successes: 5, Failures: 9}},
		}, state: ""},
		{name: "repeated failures stay out of the ratio", steps: []step{
			{c: delivery.Counters{Successes: 10, Failures: 30, Repeats: 20}},
		}, state: ""},
		{name: "repeated failures still make a streak", steps: []step{
			{c: delivery.Counters{Failures: 10, Repeats: 10}, want: opened},
		}, state: breakerOpen, cooldown: 5 * sec, openUntil: 5 * sec},
		{name: "a new minute restarts the ratio", steps: []step{
			{c: delivery.Counters{Successes: 5, Failures: 9}},
			{at: time.Minute, c: delivery.Counters{Successes: 5, Failures: 6}},
		}, state: ""},
		{name: "open admits nothing before the cool-down ends", steps: []step{
			openAt(0), {at: 4 * sec, cut: true, wake: 5 * sec},
			{at: 4 * sec, c: fails(20)}, // reports of jobs cut before it opened change nothing
		}, state: breakerOpen, cooldown: 5 * sec, openUntil: 5 * sec},
		{name: "cool-down over: half-open admits one probe", steps: []step{
			openAt(0), {at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 5 * sec, cut: true, wantOK: true},
		}, state: breakerHalfOpen, cooldown: 5 * sec},
		{name: "half-open with a probe in flight admits nothing", steps: []step{
			openAt(0), {at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 6 * sec, cut: true, inFlight: true},
		}, state: breakerHalfOpen, cooldown: 5 * sec},
		{name: "probe succeeds: closed, cool-down reset", steps: []step{
			openAt(0), {at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 6 * sec, probe: true, c: succs(1), want: closed},
			{at: 6 * sec, cut: true, wantOK: true},
		}, state: breakerClosed, cooldown: 0},
		{name: "probe fails: reopened, cool-down doubled", steps: []step{
			openAt(0), {at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 6 * sec, probe: true, c: fails(1), want: reopened},
		}, state: breakerOpen, cooldown: 10 * sec, openUntil: 16 * sec},
		{name: "probes refused by an answer: another message, reopened at the third", steps: []step{
			openAt(0), {at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 6 * sec, probe: true, c: refusedBy(500), want: probeRefused},
			{at: 6 * sec, cut: true, wantOK: true},
			{at: 7 * sec, probe: true, c: refusedBy(422), want: probeRefused},
			{at: 8 * sec, probe: true, c: refusedBy(500), want: reopened},
		}, state: breakerOpen, cooldown: 10 * sec, openUntil: 18 * sec},
		{name: "a refused probe, then a delivered one: closed", steps: []step{
			openAt(0), {at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 6 * sec, probe: true, c: refusedBy(500), want: probeRefused},
			{at: 7 * sec, probe: true, c: succs(1), want: closed},
		}, state: breakerClosed, cooldown: 0},
		{name: "a probe answered 503 reopens at once", steps: []step{
			openAt(0), {at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 6 * sec, probe: true, c: refusedBy(503), want: reopened},
		}, state: breakerOpen, cooldown: 10 * sec, openUntil: 16 * sec},
		{name: "refusals do not carry over to the next half-open spell", steps: []step{
			openAt(0), {at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 5 * sec, probe: true, c: refusedBy(500), want: probeRefused},
			{at: 5 * sec, probe: true, c: fails(1), want: reopened},
			{at: 15 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 15 * sec, probe: true, c: refusedBy(500), want: probeRefused},
			{at: 15 * sec, probe: true, c: refusedBy(500), want: probeRefused},
		}, state: breakerHalfOpen, cooldown: 10 * sec},
		{name: "probe with a success and a failure reopens", steps: []step{
			openAt(0), {at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 6 * sec, probe: true, c: delivery.Counters{Successes: 1, Failures: 1}, want: reopened},
		}, state: breakerOpen, cooldown: 10 * sec, openUntil: 16 * sec},
		{name: "probe throttled only stays half-open", steps: []step{
			openAt(0), {at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 6 * sec, probe: true, c: delivery.Counters{Throttles: 1}},
		}, state: breakerHalfOpen, cooldown: 5 * sec},
		{name: "after closing, the failures that opened it do not reopen it", steps: []step{
			{c: delivery.Counters{Successes: 9, Failures: 11}, want: opened},
			{at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 5 * sec, probe: true, c: succs(1), want: closed},
			{at: 6 * sec, c: delivery.Counters{Successes: 2, Failures: 1}},
		}, state: breakerClosed, cooldown: 0},
		{name: "after closing, a new outage starts at 5 s again", steps: []step{
			openAt(0), {at: 5 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 5 * sec, probe: true, c: fails(1), want: reopened},
			{at: 15 * sec, cut: true, wantOK: true, want: halfOpened},
			{at: 15 * sec, probe: true, c: succs(1), want: closed},
			{at: 20 * sec, c: fails(10), want: opened},
		}, state: breakerOpen, cooldown: 5 * sec, openUntil: 25 * sec},
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b breaker
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				if !s.cut {
					require.Equal(t, s.want, b.observe(now, s.c, s.probe), "step %d", i)
					continue
				}
				b.probing = b.probing || s.inFlight
				ok, wake, tr := b.mayCut(now)
				require.Equal(t, s.want, tr, "step %d", i)
				require.Equal(t, s.wantOK, ok, "step %d", i)
				if s.wake == 0 {
					require.True(t, wake.IsZero(), "step %d: wake %v", i, wake)
				} else {
					require.Equal(t, t0.Add(s.wake), wake, "step %d", i)
				}
			}
			require.Equal(t, tc.state, b.state)
			require.Equal(t, tc.cooldown, b.cooldown)
			if tc.state == breakerOpen {
				require.Equal(t, t0.Add(tc.openUntil), b.openUntil)
			}
		})
	}
}

// TestBreakerCooldownCap: each failed probe doubles the cool-down from 5 s, and it
// never exceeds 5 min.
func TestBreakerCooldownCap(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var b breaker
	require.Equal(t, opened, b.observe(now, fails(breakerConsecutive), false))
	var got []time.Duration
	for range 9 {
		got = append(got, b.cooldown)
		now = b.openUntil
		_, _, tr := b.mayCut(now)
		require.Equal(t, halfOpened, tr)
		require.Equal(t, reopened, b.observe(now, fails(1), true))
	}
	s := time.Second
	require.Equal(t, []time.Duration{5 * s, 10 * s, 20 * s, 40 * s, 80 * s, 160 * s, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}, got)
}
