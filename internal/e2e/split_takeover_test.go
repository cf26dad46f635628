package e2e

import (
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestSplitRolesTakeoverPaced runs the api in the test process and two
// `herald dispatcher` and two `herald worker` processes, publishes single messages
// paced at 500/s to one group (batch 1) and kills -9 the dispatcher owning the group
// mid-stream. The survivor must own the group within 4 s of the kill, every message
// must arrive (bodies intact, ids as published), and no more messages may arrive
// twice than the group has POSTs in flight (max_in_flight).
func TestSplitRolesTakeoverPaced(t *testing.T) {
	// Not parallel: it bounds a takeover time, which a saturated machine stretches.
	const rate, before, after, inFlight = 500, 1000, 1000, 8
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("t", 1)
	a, aID := startDispatcherProcess(t, h)
	b, bID := startDispatcherProcess(t, h)
	startWorkerProcess(t, h)
	startWorkerProcess(t, h)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_in_flight": inFlight, "batch_size": 1,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	var group int64
	require.NoError(t, h.Store.DB().QueryRow("SELECT id FROM consumer_groups WHERE name = 'g'").Scan(&group))
	var owner string
	require.Eventually(t, func() bool {
		return h.Store.DB().QueryRow("SELECT owner FROM cursors WHERE group_id = ?", group).Scan(&owner) == nil && owner != ""
	}, 10*time.Second, 20*time.Millisecond, "the group was never claimed")
	victim := a
	if owner == bID {
		victim = b
	} else {
		require.Equal(t, aID, owner)
	}

	key := h.CreateAPIKey("t")
	bodies := map[string]string{}
	start := time.Now()
	publish := func(from, n int) {
		for i := from; i < from+n; i++ {
			if d := time.Until(start.Add(time.Duration(i) * time.Second / rate)); d > 0 {
				time.Sleep(d)
			}
			body := strconv.Itoa(i)
			bodies[h.Publish(key, "t", map[string]any{"body": i})[0].ID] = body
		}
	}
	publish(0, before)
	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	var claimed atomic.Int64 // ns after the kill; 0 until the survivor owns the cursor
	go func() {
		for time.Since(killed) < 15*time.Second {
			var o string
			if h.Store.DB().QueryRow("SELECT owner FROM cursors WHERE group_id = ?", group).Scan(&o) == nil && o != "" && o != owner {
				claimed.Store(int64(time.Since(killed)))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	publish(before, after)
	_ = victim.Wait()
	r.WaitCount(before+after, 30*time.Second)

	took := time.Duration(claimed.Load())
	t.Logf("group claimed %v after the kill; %.0f msg/s published", took.Round(time.Millisecond), float64(before+after)/time.Since(start).Seconds())
	require.NotZero(t, took, "the group was not claimed within 15 s of the kill")
	require.LessOrEqual(t, took, 4*time.Second, "takeover time")
	dups := 0
	for id, body := range bodies {
		got := r.Get(id)
		require.NotEmpty(t, got, "message %s lost", id)
		require.Equal(t, body, string(got[0].Body), "body of %s", id)
		dups += len(got) - 1
	}
	require.Equal(t, before+after, r.Count(), "only published ids arrive")
	t.Logf("%d duplicates", dups)
	require.LessOrEqual(t, dups, inFlight, "duplicates beyond what was in flight")
}
