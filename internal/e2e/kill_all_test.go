package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestHeraldAllKilledTwiceMidDrain kills a `herald all` process -9 twice while it
// drains a backlog (batch 1, max_in_flight 16) and starts a fresh one after each
// kill: every message arrives, and the messages that arrive more than once are at
// most the POSTs that can be open at the two kills (2 × max_in_flight): a POST
// starts, and the group's share of max_in_flight is freed, only once what earlier
// POSTs delivered is in the process's report stream, which a successor replays.
func TestHeraldAllKilledTwiceMidDrain(t *testing.T) {
	t.Parallel()
	const n, inFlight = 4000, 16
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("t", 4)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "max_in_flight": inFlight,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	h.Admin("POST", "/groups/g/pause", nil, 200)
	body := strings.Repeat("x", 1000)
	for i := 0; i < n; i += 200 {
		batch := make([]map[string]any, 200)
		for j := range batch {
			batch[j] = map[string]any{"body": fmt.Sprintf("%s-%d", body, i+j)}
		}
		h.Publish(key, "t", batch...)
	}
	h.Admin("POST", "/groups/g/resume", nil, 200)

	env := []string{"HERALD_HTTP_ADDR=127.0.0.1:0"}
	proc := startRoleProcess(t, h, "all", env...)
	for _, at := range []int{n / 3, 2 * n / 3} {
		require.Eventually(t, func() bool { return r.Count() >= at }, 60*time.Second, 2*time.Millisecond, "the drain reaches %d", at)
		require.NoError(t, proc.Process.Signal(syscall.SIGKILL))
		_ = proc.Wait()
		proc = startRoleProcess(t, h, "all", env...)
	}
	r.WaitCount(n, 90*time.Second)
	dups := 0
	for id := range r.All() {
		dups += len(r.Get(id)) - 1
	}
	t.Logf("%d messages, %d sent again after two kills", n, dups)

	require.LessOrEqual(t, dups, 2*inFlight, "only the POSTs open at a kill may arrive again")
}
