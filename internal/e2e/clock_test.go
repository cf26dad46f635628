package e2e

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
)

// clockedHerald starts roles with every Herald connection to MySQL going through a
// ClockProxy, so the test can step the database clock as Herald sees it.
func clockedHerald(t *testing.T, roles app.Roles) (*heraldtest.Herald, *heraldtest.ClockProxy) {
	t.Helper()
	var cp *heraldtest.ClockProxy
	h := heraldtest.StartHeraldRoles(t, roles, func(c *config.Config) {
		cp = heraldtest.NewClockProxy(t, c.MySQLDSN)
		c.MySQLDSN = cp.ProxiedDSN(t, c.MySQLDSN)
	})
	return h, cp
}

// TestRetriesAfterDatabaseClockStepsBack: ten messages fail once and wait for their
// first retry (5 s); then the database clock steps an hour back. Their due times
// were written on the old clock, an hour ahead of the new NOW(); they must still be
// sent within about their retry delay of the step, not after the hour (before
// due times were re-based, none of the ten arrived within 110 s).
func TestRetriesAfterDatabaseClockStepsBack(t *testing.T) {
	t.Parallel()
	h, cp := clockedHerald(t, app.All)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	failed := map[string]bool{}
	r.Respond = func(d heraldtest.Delivery) int {
		mu.Lock()
		defer mu.Unlock()
		if !failed[d.ID] {
			failed[d.ID] = true
			return 500
		}
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	for i := range 10 {
		h.Publish(key, "t", map[string]any{"body": i})
	}
	require.Eventually(t, func() bool {
		n, err := h.Store.RetryCount(t.Context(), 1)
		return err == nil && n == 10
	}, 15*time.Second, 10*time.Millisecond, "ten messages wait for their first retry")
	require.Zero(t, r.Count())
	cp.Step(-time.Hour)
	stepped := time.Now()
	r.WaitCount(10, 30*time.Second)
	t.Logf("10 retries delivered %v after the database clock stepped 1 h back", time.Since(stepped).Round(10*time.Millisecond))
	require.LessOrEqual(t, time.Since(stepped), 15*time.Second, "retries wait about their delay (5 s ±20 %%), not the step")
}

// TestDispatcherKilledAfterDatabaseClockStep: the database clock steps an hour back
// and the dispatcher owning a group is killed right after. Its last lease was
// written on the old clock, an hour ahead; the surviving dispatcher must still take
// the group over within a few seconds (a lease never outlives its own length after
// a step), and deliver to it (before leases were re-based: 42 s).
func TestDispatcherKilledAfterDatabaseClockStep(t *testing.T) {
	// Not parallel: it measures a takeover time, which a saturated machine stretches.
	h, cp := clockedHerald(t, app.Roles{API: true, Worker: true})
	h.CreateTopic("t", 1)
	a, aID := startDispatcherProcess(t, h)
	b, bID := startDispatcherProcess(t, h)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	var gid int64
	require.NoError(t, h.Store.DB().QueryRow("SELECT id FROM consumer_groups WHERE name = 'g'").Scan(&gid))
	var owner string
	require.Eventually(t, func() bool {
		err := h.Store.DB().QueryRow("SELECT owner FROM cursors WHERE group_id = ?", gid).Scan(&owner)
		return err == nil && owner != ""
	}, 10*time.Second, 20*time.Millisecond, "the group was never claimed")
	victim := a
	if owner == bID {
		victim = b
	} else {
		require.Equal(t, aID, owner)
	}
	key := h.CreateAPIKey("t")
	h.Publish(key, "t", map[string]any{"body": "before"})
	r.WaitCount(1, 10*time.Second)

	cp.Step(-time.Hour)
	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	_ = victim.Wait()
	killed := time.Now()
	waitOwnerChange(t, h, gid, owner, 20*time.Second)
	took := time.Since(killed)
	t.Logf("group taken over %v after the kill that followed a 1 h backward step", took.Round(10*time.Millisecond))
	require.LessOrEqual(t, took, 8*time.Second, "takeover after a backward clock step")
	h.Publish(key, "t", map[string]any{"body": "after"})
	r.WaitCount(2, 15*time.Second)
}
