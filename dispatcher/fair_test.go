package dispatcher

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

// TestRotationTakesTurns: flows with work get one job per turn, in order, and the next
// step starts after the last flow served, so a budget that frees one job at a time
// goes round all of them instead of to the first.
func TestRotationTakesTurns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		work    []int // jobs each flow could cut
		budget  []int // jobs allowed per step
		perFlow []int // jobs each flow got in the end
		first   []int // flow served first in each step
	}{
		{"one job a step over two flows", []int{100, 100}, []int{1, 1, 1, 1, 1, 1}, []int{3, 3}, []int{0, 1, 0, 1, 0, 1}},
		{"three flows, two jobs a step", []int{100, 100, 100}, []int{2, 2, 2}, []int{2, 2, 2}, []int{0, 2, 1}},
		{"an idle flow is skipped", []int{100, 0, 100}, []int{1, 1, 1, 1}, []int{2, 0, 2}, []int{0, 2, 0, 2}},
		{"a flow runs dry, the rest share", []int{1, 100, 100}, []int{3, 3}, []int{1, 3, 2}, []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r rotation
			work := append([]int(nil), tc.work...)
			got := make([]int, len(work))
			for step, budget := range tc.budget {
				first := -1
				r.run(len(work), func(i int) bool {
					if budget == 0 || work[i] == 0 {
						return false
					}
					if first < 0 {
						first = i
					}
					budget--
					work[i]--
					got[i]++
					return true
				})
				require.Equal(t, tc.first[step], first, "step %d", step)
			}
			require.Equal(t, tc.perFlow, got)
		})
	}
}

// TestShareCredits: a job's parallelism never exceeds the free credits, a lone job may
// take them all, and busy flows split them.
func TestShareCredits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		s     share
		posts int
		more  bool
		want  int
	}{
		{"lone job takes every credit", share{max: 16, busy: 1}, 80, false, 16},
		{"lone backlogged flow takes half", share{max: 16, busy: 1}, 100, true, 8},
		{"two busy flows", share{max: 16, busy: 2}, 100, false, 8},
		{"two busy flows, more waiting", share{max: 16, busy: 2}, 100, true, 6},
		{"four busy flows", share{max: 4, busy: 4}, 10, true, 1},
		{"never more than free", share{max: 16, used: 14, busy: 1}, 100, false, 2},
		{"nothing free", share{max: 16, used: 16, busy: 1}, 5, false, 0},
		{"few posts", share{max: 16, busy: 1}, 3, false, 3},
		{"more flows than credits", share{max: 2, busy: 8}, 5, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.s.credits(tc.posts, tc.more))
		})
	}
}

// TestPostTimeWaves: the POST time is an EWMA of reports' means; it gives one POST
// per credit for a slow endpoint, more for a fast one, firstWaves before any report.
func TestPostTimeWaves(t *testing.T) {
	t.Parallel()
	var p postTime
	if got := p.waves(); got != firstWaves {
		t.Fatalf("unknown POST time: %d waves, want %d", got, firstWaves)
	}
	p.observe(delivery.Counters{Gone: true}) // no POST counted: still unknown
	if p.seen {
		t.Fatal("a report without a POST set the POST time")
	}
	p.observe(delivery.Counters{Successes: 2, LatencySumMS: 800}) // 400 ms a POST
	if got := p.waves(); got != 1 {
		t.Fatalf("400 ms POSTs: %d waves, want 1 (never below one)", got)
	}
	p.observe(delivery.Counters{Successes: 1, Throttles: 1, LatencySumMS: 0})
	if p.ms != 300 {
		t.Fatalf("EWMA after a 0 ms report: %.1f ms, want 300", p.ms)
	}
	q := postTime{ms: 5, seen: true}
	if got := q.waves(); got != 50 {
		t.Fatalf("5 ms POSTs: %d waves, want 50", got)
	}
	if got := (postTime{ms: 0.2, seen: true}).waves(); got < 1000 {
		t.Fatalf("sub-millisecond POSTs are bounded to %d waves", got)
	}
}

// TestJobMessagesWithinTurn: against a slow endpoint a job carries one wave of its
// credits; against a fast one job_size.
func TestJobMessagesWithinTurn(t *testing.T) {
	t.Parallel()
	gs := &groupState{g: &models.Group{BatchSize: 10, MaxInFlight: 4}, busy: 1}
	gs.post = postTime{ms: 400, seen: true}
	// A lone backlogged flow gets half the credits (2) and one wave: 2 POSTs of 10.
	if got := gs.jobMessages(100, true); got != 20 {
		t.Fatalf("slow endpoint: a job of %d messages, want 20", got)
	}
	gs.post = postTime{ms: 2, seen: true}
	if got := gs.jobMessages(100, true); got != 100 {
		t.Fatalf("fast endpoint: a job of %d messages, want job_size 100", got)
	}
}
