package web_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestConsoleDeadLettersByState: three messages die against a failing endpoint; one
// is purged and one redriven (then delivered) from the console. The state filter
// offers pending, redriven, purged and all: each state lists its one dead letter,
// all lists the three, and only pending ones can be selected.
func TestConsoleDeadLettersByState(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	var healthy atomic.Bool
	recv := heraldtest.NewReceiver(t)
	recv.Respond = func(heraldtest.Delivery) int {
		if healthy.Load() {
			return 204
		}
		return 500
	}
	h.CreateTopic("risky", 1)
	recv.SetSecret(h.CreateGroup(map[string]any{"name": "flaky", "endpoint_url": recv.URL, "max_attempts": 1, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "risky"}}}))
	h.Publish(h.CreateAPIKey("risky"), "risky", map[string]any{"body": 1}, map[string]any{"body": 2}, map[string]any{"body": 3})
	c := newConsole(t, h)
	ids := func(state string) []string {
		page := c.get("/console/dead-letters?group=flaky&state=" + state)
		require.Equal(t, state, find(t, page, `(?s)<select id="d-state" name="state">.*?<option value="([^"]*)"\s+selected`), "the filter shows its choice")
		var out []string
		for _, row := range strings.Split(find(t, page, `(?s)<tbody>(.*?)</tbody>`), "<tr>")[1:] {
			if strings.Contains(row, "no-dead-letters") {
				continue
			}
			out = append(out, find(t, row, `&amp;id=(\d+)"`)+":"+find(t, row, `<span class="badge [a-z]+">([a-z]+)</span>`))
		}
		return out
	}
	require.Eventually(t, func() bool { return len(ids("pending")) == 3 }, 20*time.Second, 100*time.Millisecond, "three dead letters")
	pending := ids("pending")
	first, second := strings.TrimSuffix(pending[0], ":pending"), strings.TrimSuffix(pending[1], ":pending")

	form := c.form("/console/dead-letters?group=flaky", "dlq-form")
	form.Set("id", first)
	code, page := c.submit("/console/dead-letters/flaky/purge", form)
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "1 dead letters purged")
	healthy.Store(true)
	form.Set("id", second)
	code, page = c.submit("/console/dead-letters/flaky/redrive", form)
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "1 dead letters redriven")
	recv.WaitCount(1, 20*time.Second) // the redriven message is delivered (failed POSTs are not counted)

	require.Equal(t, []string{first + ":purged"}, ids("purged"))
	require.Equal(t, []string{second + ":redriven"}, ids("redriven"))
	require.Len(t, ids("pending"), 1)
	all := ids("all")
	require.Len(t, all, 3, "all lists every state")
	require.ElementsMatch(t, []string{first + ":purged", second + ":redriven", strings.TrimSuffix(pending[2], ":pending") + ":pending"}, all)
	page = c.get("/console/dead-letters?group=flaky&state=all")
	require.Equal(t, 1, strings.Count(page, `<input type="checkbox" name="id"`), "only the pending one can be selected")
	require.Contains(t, find(t, page, `(?s)(<select id="d-state".*?</select>)`), `<option value="all"`)

	h.CreateGroup(map[string]any{"name": "calm", "endpoint_url": "http://8.8.8.8/hook", "subscriptions": []map[string]any{{"topic": "risky"}}})
	require.Contains(t, c.get("/console/dead-letters?group=calm&state=all"), `id="no-dead-letters">No dead letters.<`)
}
