package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestSplitRolesResetFencesStream: with the api in the test process and a
// `herald dispatcher` and a `herald worker` process, single messages published one
// per request (their bodies ride the Redis notification into the jobs, so the worker
// reads nothing back) build a backlog at a slow endpoint; a reset to latest mid-stream
// must stop every POST of an older message once it has answered, and a message
// published after it must arrive.
func TestSplitRolesResetFencesStream(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("t", 1)
	startDispatcherProcess(t, h)
	startWorkerProcess(t, h)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(heraldtest.Delivery) int { time.Sleep(100 * time.Millisecond); return 204 } // a slow receiver: 40 msg/s at max_in_flight 4
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_in_flight": 4, "batch_size": 1,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	var old []heraldtest.Published
	for i := range 300 {
		old = append(old, h.Publish(key, "t", map[string]any{"body": i})[0])
	}
	r.WaitCount(20, 15*time.Second)
	h.Admin("POST", "/groups/g/offsets/reset", map[string]any{"to": "latest"}, 200)
	answered := time.Now()
	marker := h.Publish(key, "t", map[string]any{"body": "after"})[0]
	require.Eventually(t, func() bool { return len(r.Get(marker.ID)) > 0 }, 15*time.Second, 5*time.Millisecond)
	time.Sleep(300 * time.Millisecond)  // lets stragglers of old jobs arrive, so the check below sees them
	const grace = 20 * time.Millisecond // scheduling jitter between a POST's start and its arrival (as TestResetFencesRunningJobs)
	var late, before int
	for _, m := range old {
		for _, d := range r.Get(m.ID) {
			if d.At.After(answered.Add(grace)) {
				late++
			} else {
				before++
			}
		}
	}
	t.Logf("old messages delivered: %d before the reset answered (+%v), %d after", before, grace, late)
	require.Zero(t, late, "POSTs of messages below the reset offset after the reset answered")
	require.Less(t, before, len(old), "the reset came after the backlog drained; the test proves nothing")
}
