package dispatcher

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/bus"
)

// ghostPoll is how often a held cursor's ghosts are checked for their end.
const ghostPoll = 250 * time.Millisecond

// ghosts are the jobs a cursor's previous owner sent that a worker still runs when
// this dispatcher takes the cursor over (bus.Jobs.Open). The cursor stays held
// while they run and their POSTs hold the group's credits, so max_in_flight holds
// across a takeover even when a POST outlasts it; once they end, the previous
// owner's report stream holds their outcomes, and what they delivered is not sent
// again.
type ghosts struct {
	counted bool // Open was asked
	jobs    []bus.OpenJob
	posts   int // credits held: the sum of jobs' POSTs
}

// waitGhosts reports whether cs, due for its takeover, stays held because its
// previous owner's jobs still run: the first call finds them and charges their
// POSTs to the group's credits, later ones give back the credits of those that
// ended. A bus error gives the credits back and waits no longer.
func (t *takeovers) waitGhosts(ctx context.Context, cs *cursorState) bool {
	tk := cs.takeover
	if tk.from == "" || tk.from == t.self || t.jobs == nil {
		return false
	}
	var jobs []bus.OpenJob
	var err error
	if !tk.ghosts.counted {
		tk.ghosts.counted = true
		jobs, err = t.jobs.Open(ctx, tk.from, cs.groupID, cs.queueID)
		if len(jobs) > 0 {
			t.log.Info("the previous owner's jobs still run; the cursor waits for them and their POSTs count against max_in_flight",
				"group", cs.group.g.Name, "queue", cs.queueID, "owner", tk.from, "jobs", len(jobs))
		}
	} else if len(tk.ghosts.jobs) > 0 {
		jobs, err = t.jobs.StillOpen(ctx, tk.ghosts.jobs)
	}
	if err != nil {
		t.log.Warn("find the previous owner's open jobs; max_in_flight may be exceeded while they run", "owner", tk.from, "err", err)
		jobs = nil
	}
	settleGhosts(cs, jobs)
	if len(jobs) == 0 {
		return false
	}
	tk.at = t.now().Add(ghostPoll)
	t.wakeBy(tk.at)
	return true
}

// settleGhosts sets the ghosts of cs (held for its takeover) to jobs, moving the
// group's credits by the difference.
func settleGhosts(cs *cursorState, jobs []bus.OpenJob) {
	g := &cs.takeover.ghosts
	posts := 0
	for _, j := range jobs {
		posts += j.POSTs
	}
	cs.group.inflightP += posts - g.posts
	g.jobs, g.posts = jobs, posts
}
