package dispatcher

import (
	"time"

	"github.com/heraldhq/herald/internal/delivery"
)

// rotation hands a group's turns to its flows (each cursor, then the retry topic) in
// round-robin order, one job per turn, carrying on where the previous step stopped:
// every flow with work gets the next turn before any flow gets a second one, so tokens
// and in-flight credits that free up one at a time go to the flows in turn, as
// RocketMQ's consumer balances its process queues. The zero value starts at flow 0.
type rotation struct {
	next int
}

// run offers turns to flows 0..n-1 starting at the saved position until n turns in a
// row find nothing to do; try cuts at most one job for flow i and reports whether it
// did. A step costs the jobs cut plus n.
func (r *rotation) run(n int, try func(i int) bool) {
	if n <= 0 {
		return
	}
	for idle := 0; idle < n; {
		i := r.next % n
		r.next = (i + 1) % n
		if try(i) {
			idle = 0
		} else {
			idle++
		}
	}
}

// share divides a group's in-flight credits (max_in_flight) among its flows.
type share struct {
	max  int // the group's max_in_flight
	used int // credits held by jobs in flight, first deliveries and retries
	busy int // flows with work waiting, the one asking included
}

// credits returns the parallelism of a new job of posts POSTs: never more than the free
// credits, so the jobs in flight never hold more than max; and at most an equal share
// among the waiting units, which are the busy flows plus this flow's next job when more
// than this job waits in it. So a lone job may use every credit, a single backlogged
// flow takes half (its next job starts while this one's last POSTs finish), and busy
// flows split the credits evenly. 0 means no credit is free.
func (s share) credits(posts int, more bool) int {
	free := s.max - s.used
	if free < 1 || posts < 1 {
		return 0
	}
	units := max(s.busy, 1)
	if more {
		units++
	}
	return min(posts, free, (s.max+units-1)/units)
}

// jobTurn bounds how long a new job may hold its credits at the group's recent POST
// time: a job keeps its credits until its last POST returns, so one queue's long
// jobs against a slow endpoint would keep another queue's first POST waiting for
// seconds although turns rotate (rotation). A job is never cut below one POST per
// credit.
const jobTurn = 250 * time.Millisecond

// firstWaves is how many POSTs per credit a job carries while the group's POST time
// is still unknown (no report with a POST yet).
const firstWaves = 4

// postTime is a group's recent mean POST time: an EWMA, weight 1/4 per report, of
// each report's mean (delivery.Counters LatencySumMS over its POSTs).
type postTime struct {
	ms   float64
	seen bool
}

// observe takes one report's counters; a report without a POST changes nothing.
func (p *postTime) observe(c delivery.Counters) {
	posts := c.Successes + c.Failures + c.Throttles
	if posts == 0 {
		return
	}
	mean := float64(c.LatencySumMS) / float64(posts)
	if !p.seen {
		p.ms, p.seen = mean, true
		return
	}
	p.ms += (mean - p.ms) / 4
}

// waves returns how many POSTs per credit a new job may carry to end within
// jobTurn: at least 1, firstWaves while the POST time is unknown, and no bound
// worth counting (1<<20) for POSTs under a millisecond.
func (p postTime) waves() int {
	switch {
	case !p.seen:
		return firstWaves
	case p.ms < 1:
		return 1 << 20
	}
	return max(1, int(float64(jobTurn.Milliseconds())/p.ms))
}

// jobMessages caps n, the messages a new job of gs would carry, so the job ends
// within jobTurn at its parallelism (credits); more says messages of the flow wait
// beyond these n.
func (gs *groupState) jobMessages(n int, more bool) int {
	b := max(gs.g.BatchSize, 1)
	par := gs.credits((n+b-1)/b, more)
	return min(n, max(par, 1)*gs.post.waves()*b)
}
