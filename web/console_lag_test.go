package web_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// get opens a console page and returns its HTML (status 200 required).
func (c *console) get(path string) string {
	c.t.Helper()
	req, err := http.NewRequest("GET", c.h.BaseURL+path, nil)
	require.NoError(c.t, err)
	code, page := c.do(req)
	require.Equal(c.t, 200, code, page)
	return page
}

// find returns the first submatch of re in page, failing when there is none.
func find(t *testing.T, page, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(page)
	require.NotNil(t, m, "no %s in the page", re)
	return m[1]
}

type apiStats struct {
	LagMessages int64   `json:"lag_messages"`
	LagSeconds  float64 `json:"lag_seconds"`
}

func statsOf(t *testing.T, h *heraldtest.Herald, group string) apiStats {
	t.Helper()
	var s apiStats
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/"+group+"/stats", nil, 200), &s))
	return s
}

// TestConsoleLagCountsReadButUndelivered: a paused group whose backlog the dispatcher
// had already read (its endpoint hangs on the first POST), and an ordered group whose
// queue is blocked on a failing head, each hold 300 undelivered messages that their
// cursors' commits have passed and list as undone. The overview's total lag, the
// group list, the group page and GET /groups/{g}/stats all say 300 for each; the
// group page's recent messages show none of them delivered and lists the ordered
// group's blocked head.
func TestConsoleLagCountsReadButUndelivered(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	release := make(chan struct{})
	slow := heraldtest.NewReceiver(t)
	slow.Respond = func(heraldtest.Delivery) int { <-release; return 204 }
	failing := heraldtest.NewReceiver(t)
	failing.Respond = func(heraldtest.Delivery) int { return 500 }
	t.Cleanup(func() { close(release) }) // runs before the receivers and Herald stop

	h.CreateTopic("orders", 1)
	h.CreateTopic("ledger", 1)
	slow.SetSecret(h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": slow.URL, "consume_from": "earliest",
		"max_in_flight": 1, "batch_size": 1, "timeout_ms": 30000, "subscriptions": []map[string]any{{"topic": "orders"}}}))
	failing.SetSecret(h.CreateGroup(map[string]any{"name": "journal", "endpoint_url": failing.URL, "consume_from": "earliest",
		"ordered": true, "ordering": "queue", "ordered_on_exhausted": "pause", "max_attempts": 100, "retry_schedule": []int{60},
		"subscriptions": []map[string]any{{"topic": "ledger"}}}))
	msgs := make([]map[string]any, 300)
	for i := range msgs {
		msgs[i] = map[string]any{"body": map[string]int{"i": i}}
	}
	h.Publish(h.CreateAPIKey("orders"), "orders", msgs...)
	h.Publish(h.CreateAPIKey("ledger"), "ledger", msgs...)

	// Both cursors commit past every message they read, listing the undelivered ones.
	committedPast := func(group string) bool {
		var cs struct {
			Items []struct {
				Offset    int64 `json:"offset"`
				MaxOffset int64 `json:"max_offset"`
			} `json:"items"`
		}
		require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/"+group+"/offsets", nil, 200), &cs))
		return len(cs.Items) == 1 && cs.Items[0].Offset > 1 && cs.Items[0].Offset == cs.Items[0].MaxOffset
	}
	require.Eventually(t, func() bool { return committedPast("billing") && committedPast("journal") }, 20*time.Second, 50*time.Millisecond,
		"the dispatcher reads both backlogs and commits past them")
	h.Admin("POST", "/groups/billing/pause", nil, 200)

	c := newConsole(t, h)
	for _, g := range []string{"billing", "journal"} {
		s := statsOf(t, h, g)
		require.EqualValues(t, 300, s.LagMessages, "%s: the API counts every undelivered message", g)
		require.Greater(t, s.LagSeconds, 0.0, g)
		page := c.get("/console/groups/" + g)
		require.Equal(t, "300", find(t, page, `id="group-lag">([^<]*)<`), g)
		require.NotRegexp(t, `data-id="[^"]+">delivered<`, page, "%s: no undelivered message is badged delivered", g)
		require.Regexp(t, `data-id="[^"]+">pending<`, page, g)
		list := c.get("/console/groups")
		require.Equal(t, "300", find(t, list, `data-group="`+g+`">([^<]*)<`), "%s: the group list", g)
	}
	require.Eventually(t, func() bool { // the owner records the block at the head's first failure
		return regexp.MustCompile(`id="blocked">.*>msg_\d+_1</a>`).MatchString(strings.ReplaceAll(c.get("/console/groups/journal"), "\n", " "))
	}, 10*time.Second, 50*time.Millisecond, "the ordered head is listed as blocked")
	require.Equal(t, "600", find(t, c.get("/console/"), `id="total-lag">([^<]*)<`), "the overview's total")
}

func mustGet(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	return req
}
