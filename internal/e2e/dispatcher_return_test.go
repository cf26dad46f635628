package e2e

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
)

// TestDispatcherKilledAndBack runs separate roles (the api here, two dispatcher and
// two worker processes) under ~100 msg/s on 40 keys, kills -9 the dispatcher that
// owns the first group and starts a new one 3 s later, which takes groups back
// from the survivor. Every message arrives; per unordered group (max_in_flight 4)
// at most twice max_in_flight arrive again (the POSTs open at the kill, then at the
// hand-back), per group ordered by queue (four queues, one POST each) at most
// twice four, and no two POSTs of one queue of an ordered group are ever open at
// once.
func TestDispatcherKilledAndBack(t *testing.T) {
	const inFlight, groups, queues = 4, 3, 4
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("t", queues)
	a, aID := startDispatcherProcess(t, h)
	b, _ := startDispatcherProcess(t, h)
	startWorkerProcess(t, h)
	startWorkerProcess(t, h)

	type watched struct {
		name    string
		ordered bool
		r       *heraldtest.Receiver
		mu      sync.Mutex
		open    map[int64]int // open POSTs by queue
		overlap atomic.Int32  // POSTs that found another of their queue open
	}
	var all []*watched
	for i := range 2 * groups {
		w := &watched{name: fmt.Sprintf("g%d", i), ordered: i >= groups, r: heraldtest.NewReceiver(t), open: map[int64]int{}}
		w.r.Respond = func(d heraldtest.Delivery) int {
			q, _, err := models.ParseMessageID(d.ID)
			if err == nil {
				w.mu.Lock()
				w.open[q]++
				if w.open[q] > 1 {
					w.overlap.Add(1)
				}
				w.mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
			if err == nil {
				w.mu.Lock()
				w.open[q]--
				w.mu.Unlock()
			}
			return 204
		}
		spec := map[string]any{"name": w.name, "endpoint_url": w.r.URL, "max_in_flight": inFlight, "batch_size": 1,
			"subscriptions": []map[string]any{{"topic": "t"}}}
		if w.ordered {
			spec["ordered"], spec["ordering"] = true, "queue"
		}
		w.r.SetSecret(h.CreateGroup(spec))
		all = append(all, w)
	}
	victim := b
	if groupOwner(t, h, "g0") == aID {
		victim = a
	}

	key := h.CreateAPIKey("t")
	const rate, total = 100, 1200
	var sent atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		for i := range total {
			if d := time.Until(start.Add(time.Duration(i) * time.Second / rate)); d > 0 {
				time.Sleep(d)
			}
			code, body, _ := h.Do("POST", "/v1/topics/t/messages", key, map[string]any{"messages": []map[string]any{{"body": i, "key": fmt.Sprintf("k%d", i%40)}}})
			if code != 201 {
				t.Errorf("publish %d: %d %s", i, code, body)
				return
			}
			sent.Add(1)
		}
	}()
	require.Eventually(t, func() bool { return sent.Load() >= 300 }, 20*time.Second, 10*time.Millisecond)
	killedAt := time.Now()
	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	_ = victim.Wait()
	time.Sleep(3 * time.Second)
	backAt := time.Now()
	startDispatcherProcess(t, h)
	<-done
	for _, w := range all {
		w.r.WaitCount(total, 90*time.Second)
	}
	for _, w := range all {
		dups := 0
		var when []string
		for id := range w.r.All() {
			ds := w.r.Get(id)
			dups += len(ds) - 1
			for _, d := range ds[1:] {
				when = append(when, fmt.Sprintf("%s first +%.2fs again +%.2fs", id, ds[0].At.Sub(killedAt).Seconds(), d.At.Sub(killedAt).Seconds()))
			}
		}
		if len(when) > 0 {
			t.Logf("%s repeats (seconds after the kill; the new dispatcher started at +%.2fs): %v", w.name, backAt.Sub(killedAt).Seconds(), when)
		}
		t.Logf("%s (ordered %v): %d messages, %d sent again, %d POSTs found another of their queue open", w.name, w.ordered, total, dups, w.overlap.Load())
		bound := 2 * inFlight
		if w.ordered {
			bound = 2 * queues
			assert.Zero(t, w.overlap.Load(), "%s: two POSTs of one queue open at once", w.name)
		}
		assert.LessOrEqual(t, dups, bound, "%s: only the POSTs open at the kill and the hand-back may arrive again", w.name)
	}
}

// groupOwner waits until group name's cursors are claimed and returns the
// dispatcher that holds its first one.
func groupOwner(t *testing.T, h *heraldtest.Herald, name string) string {
	t.Helper()
	var group int64
	require.NoError(t, h.Store.DB().QueryRow("SELECT id FROM consumer_groups WHERE name = ?", name).Scan(&group))
	var owner string
	require.Eventually(t, func() bool {
		return h.Store.DB().QueryRow("SELECT owner FROM cursors WHERE group_id = ? ORDER BY id LIMIT 1", group).Scan(&owner) == nil && owner != ""
	}, 10*time.Second, 20*time.Millisecond, "group %s was never claimed", name)
	return owner
}
