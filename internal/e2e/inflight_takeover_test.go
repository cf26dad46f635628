package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestMaxInFlightAcrossTakeoverAndHandBack runs separate roles (the api here, two
// dispatcher and two worker processes) with eight unordered groups whose receivers
// answer after 5 s, so a POST outlasts a takeover (claimed about 2.5 s after a
// kill). The dispatcher owning the first group is killed -9 while its POSTs are
// open; once the survivor holds every group a new dispatcher starts and takes some
// of them back, again while POSTs are open. Every message arrives, no receiver ever
// sees more POSTs open at once than its group's max_in_flight, and at most the POSTs
// open at the kill and at the hand-back arrive again.
func TestMaxInFlightAcrossTakeoverAndHandBack(t *testing.T) {
	const inFlight, groups, perGroup = 3, 8, 9
	const respondAfter = 5 * time.Second
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("t", 2)
	a, aID := startDispatcherProcess(t, h)
	b, bID := startDispatcherProcess(t, h)
	startWorkerProcess(t, h)
	startWorkerProcess(t, h)
	var rs []*heraldtest.Receiver
	for i := range groups {
		r := heraldtest.NewReceiver(t)
		r.Respond = func(heraldtest.Delivery) int { time.Sleep(respondAfter); return 204 }
		r.SetSecret(h.CreateGroup(map[string]any{"name": fmt.Sprintf("g%d", i), "endpoint_url": r.URL, "max_in_flight": inFlight,
			"batch_size": 1, "subscriptions": []map[string]any{{"topic": "t"}}}))
		rs = append(rs, r)
	}
	victim, victimID := b, bID
	if groupOwner(t, h, "g0") == aID {
		victim, victimID = a, aID
	}
	key := h.CreateAPIKey("t")
	msgs := make([]map[string]any, perGroup)
	for i := range msgs {
		msgs[i] = map[string]any{"body": i}
	}
	h.Publish(key, "t", msgs...)
	require.Eventually(t, func() bool { return rs[0].InFlight() == inFlight }, 10*time.Second, 10*time.Millisecond, "g0's window fills")
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	_ = victim.Wait()
	killed := time.Now()
	require.Eventually(t, func() bool {
		var n int
		return h.Store.DB().QueryRow("SELECT COUNT(*) FROM cursors WHERE owner = ?", victimID).Scan(&n) == nil && n == 0
	}, 15*time.Second, 20*time.Millisecond, "the survivor claims the killed dispatcher's cursors")
	t.Logf("claimed %v after the kill", time.Since(killed).Round(time.Millisecond))
	before := map[string]string{}
	for i := range groups {
		before[fmt.Sprintf("g%d", i)] = groupOwner(t, h, fmt.Sprintf("g%d", i))
	}
	time.Sleep(respondAfter / 3)
	_, newID := startDispatcherProcess(t, h)
	require.Eventually(t, func() bool {
		for name := range before {
			if groupOwner(t, h, name) == newID {
				return true
			}
		}
		return false
	}, 15*time.Second, 50*time.Millisecond, "the new dispatcher takes a group back")
	for i, r := range rs {
		r.WaitCount(perGroup, 60*time.Second)
		dups := 0
		for id := range r.All() {
			dups += len(r.Get(id)) - 1
		}
		t.Logf("g%d: %d distinct messages, %d sent again, at most %d POSTs open at once", i, r.Count(), dups, r.MaxInFlight())
		assert.LessOrEqual(t, r.MaxInFlight(), inFlight, "g%d: POSTs open at once", i)
		assert.LessOrEqual(t, dups, 2*inFlight, "g%d: only POSTs open at the kill and the hand-back may arrive again", i)
	}
}
