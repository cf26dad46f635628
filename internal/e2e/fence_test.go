package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/delivery"
)

// TestResetWhilePausedSkipsBacklog pauses a group, lets a backlog build, resets it
// to latest and resumes at once: the backlog is never sent, whatever the timing of
// resume against the dispatcher's view of the reset.
func TestResetWhilePausedSkipsBacklog(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	h.Publish(key, "t", map[string]any{"body": "warm"})
	r.WaitCount(1, 10*time.Second)

	h.Admin("POST", "/groups/g/pause", nil, 200)
	backlog := make([]map[string]any, 8)
	for i := range backlog {
		backlog[i] = map[string]any{"body": i}
	}
	old := h.Publish(key, "t", backlog...)
	h.Admin("POST", "/groups/g/offsets/reset", map[string]any{"to": "latest"}, 200)
	h.Admin("POST", "/groups/g/resume", nil, 200)
	marker := h.Publish(key, "t", map[string]any{"body": "after"})[0]
	require.Eventually(t, func() bool { return len(r.Get(marker.ID)) > 0 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // anything stale would have been cut with the marker
	for _, m := range old {
		require.Empty(t, r.Get(m.ID), "message %s below the reset offset was delivered", m.ID)
	}
}

// TestResetFencesRunningJobs resets a group to latest while its jobs are running at
// a worker against a slow endpoint: no POST of a message below the new offset
// starts after the reset has answered.
func TestResetFencesRunningJobs(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	r.Respond = func(heraldtest.Delivery) int { time.Sleep(20 * time.Millisecond); return 204 } // latency: a slow receiver
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_in_flight": 4,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	backlog := make([]map[string]any, 300)
	for i := range backlog {
		backlog[i] = map[string]any{"body": i}
	}
	old := h.Publish(key, "t", backlog...)
	r.WaitCount(20, 10*time.Second)
	h.Admin("POST", "/groups/g/offsets/reset", map[string]any{"to": "latest"}, 200)
	answered := time.Now()
	marker := h.Publish(key, "t", map[string]any{"body": "after"})[0]
	require.Eventually(t, func() bool { return len(r.Get(marker.ID)) > 0 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // lets stragglers of old jobs arrive, so the check below sees them
	// The fence is raised before the answer's remaining work (notify, positions,
	// audit): old POSTs were seen to arrive 8–42 ms before the answer. The grace only
	// absorbs scheduling jitter between a POST's start and its arrival.
	const grace = 20 * time.Millisecond
	var late, before int
	var last time.Time
	for _, m := range old {
		for _, d := range r.Get(m.ID) {
			if d.At.After(last) {
				last = d.At
			}
			if d.At.After(answered.Add(grace)) {
				late++
			} else {
				before++
			}
		}
	}
	t.Logf("old messages delivered: %d before the reset answered (+%v), %d after; the last arrived %v after the answer",
		before, grace, late, last.Sub(answered))
	require.Zero(t, late, "POSTs of messages below the reset offset after the reset answered")
	require.Less(t, before, len(old), "the reset came after the backlog drained; the test proves nothing")
}

// TestResetFencesQueuedJobs resets a group while its jobs wait on asynq with no
// worker running: the worker started afterwards sends none of them.
func TestResetFencesQueuedJobs(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	backlog := make([]map[string]any, 50)
	for i := range backlog {
		backlog[i] = map[string]any{"body": i}
	}
	old := h.Publish(key, "t", backlog...)
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: h.Cfg.RedisAddr})
	defer insp.Close()
	require.Eventually(t, func() bool {
		pending, err := insp.ListPendingTasks(delivery.Keys{Namespace: h.Cfg.Namespace}.AsynqQueue())
		return err == nil && len(pending) > 0
	}, 10*time.Second, 10*time.Millisecond, "the dispatcher never enqueued the backlog")
	h.Admin("POST", "/groups/g/offsets/reset", map[string]any{"to": "latest"}, 200)
	h.Start(app.Roles{Worker: true})
	marker := h.Publish(key, "t", map[string]any{"body": "after"})[0]
	require.Eventually(t, func() bool { return len(r.Get(marker.ID)) > 0 }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		pending, err := insp.ListPendingTasks(delivery.Keys{Namespace: h.Cfg.Namespace}.AsynqQueue())
		return err == nil && len(pending) == 0
	}, 10*time.Second, 10*time.Millisecond, "the old jobs were never taken")
	time.Sleep(200 * time.Millisecond) // proves the taken old jobs POST nothing: nothing signals an absence
	for _, m := range old {
		require.Empty(t, r.Get(m.ID), "message %s of a job queued before the reset was delivered", m.ID)
	}
}

// deliveryCounts returns, per webhook-id, how many times the receiver accepted it.
func deliveryCounts(r *heraldtest.Receiver) map[string]int {
	out := map[string]int{}
	for id := range r.All() {
		out[id] = len(r.Get(id))
	}
	return out
}

// waitOwnerChange waits until every cursor of group is owned by a dispatcher other
// than from.
func waitOwnerChange(t *testing.T, h *heraldtest.Herald, group int64, from string, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(*) FROM cursors WHERE group_id = ? AND (owner = ? OR owner = '')", group, from).Scan(&n))
		return n == 0
	}, within, 20*time.Millisecond, "group %d still owned by the killed dispatcher", group)
}

// startDispatcherProcess runs `herald dispatcher` (default lease and heartbeat)
// against h's database and namespace, waits for its row in dispatchers and returns
// the command and the dispatcher's id.
func startDispatcherProcess(t *testing.T, h *heraldtest.Herald) (*exec.Cmd, string) {
	t.Helper()
	var before []string
	rows, err := h.Store.DB().Query("SELECT id FROM dispatchers")
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		before = append(before, id)
	}
	require.NoError(t, rows.Close())
	cmd := exec.Command(heraldBin, "dispatcher")
	cmd.Env = append(os.Environ(), h.Env()...)
	if os.Getenv("HERALD_TEST_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	var id string
	require.Eventually(t, func() bool {
		rows, err := h.Store.DB().Query("SELECT id FROM dispatchers")
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			if !slices.Contains(before, s) {
				id = s
				return true
			}
		}
		return false
	}, 15*time.Second, 20*time.Millisecond, "the dispatcher process never heartbeat")
	return cmd, id
}

// TestDispatcherKilledTakeover kills -9 the dispatcher owning some groups while their
// jobs run against a slow endpoint. The surviving dispatcher must claim them within
// 5 s (lease and heartbeat in database time), fence the dead owner's jobs, apply the
// reports it left behind, and deliver the rest with no more duplicates than were in
// flight (max_in_flight POSTs of one message each).
func TestDispatcherKilledTakeover(t *testing.T) {
	// Not parallel: it measures a takeover time and a duplicate bound, which a machine
	// saturated by the other tests stretches (a stalled owner loses its lease early).
	const groups, msgs, inFlight = 4, 300, 4
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Worker: true}, nil)
	h.CreateTopic("t", 1)
	a, aID := startDispatcherProcess(t, h)
	b, bID := startDispatcherProcess(t, h)
	recv := make([]*heraldtest.Receiver, groups)
	ids := make([]int64, groups)
	for i := range recv {
		r := heraldtest.NewReceiver(t)
		r.Respond = func(heraldtest.Delivery) int { time.Sleep(100 * time.Millisecond); return 204 } // latency: a slow receiver
		name := fmt.Sprintf("g%d", i)
		r.SetSecret(h.CreateGroup(map[string]any{"name": name, "endpoint_url": r.URL, "max_in_flight": inFlight,
			"subscriptions": []map[string]any{{"topic": "t"}}}))
		recv[i] = r
		require.NoError(t, h.Store.DB().QueryRow("SELECT id FROM consumer_groups WHERE name = ?", name).Scan(&ids[i]))
	}
	owners := make([]string, groups)
	require.Eventually(t, func() bool {
		for i, id := range ids {
			if err := h.Store.DB().QueryRow("SELECT owner FROM cursors WHERE group_id = ?", id).Scan(&owners[i]); err != nil || owners[i] == "" {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "groups were never claimed")
	victim, victimID := a, aID
	if owners[0] == bID {
		victim, victimID = b, bID
	}
	var hit []int
	for i := range owners {
		if owners[i] == victimID {
			hit = append(hit, i)
		}
	}
	body := make([]map[string]any, msgs)
	for i := range body {
		body[i] = map[string]any{"body": i}
	}
	h.Publish(h.CreateAPIKey("t"), "t", body...)
	for _, i := range hit {
		recv[i].WaitCount(30, 15*time.Second)
	}

	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	_ = victim.Wait()
	killed := time.Now()
	for _, i := range hit {
		waitOwnerChange(t, h, ids[i], victimID, 8*time.Second)
		t.Logf("group g%d claimed %v after the kill", i, time.Since(killed).Round(time.Millisecond))
		require.LessOrEqual(t, time.Since(killed), 5*time.Second, "takeover of g%d", i)
	}
	for i, r := range recv {
		r.WaitCount(msgs, 30*time.Second)
		dups := 0
		for _, n := range deliveryCounts(r) {
			dups += n - 1
		}
		t.Logf("group g%d (taken over: %v): %d duplicates", i, slices.Contains(hit, i), dups)
		require.LessOrEqual(t, dups, inFlight, "duplicates of g%d beyond what was in flight", i)
	}
}
