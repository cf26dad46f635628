package web_test

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestConsoleRefreshesLiveState: in headless Chromium, the overview, a group's page
// and a topic's page show newly published messages (lag, offsets) by swapping in the
// server-rendered live fragment, without reloading the page; the fragment request
// answers only the fragment, and the group page charts the last hour.
func TestConsoleRefreshesLiveState(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 1)
	h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": "http://127.0.0.1:9/hook", "subscriptions": []map[string]any{{"topic": "orders"}}})
	h.Admin("POST", "/groups/billing/pause", nil, 200) // nothing is read: the lag is the published count
	key := h.CreateAPIKey("orders")
	publish := func(n int) {
		msgs := make([]map[string]any, n)
		for i := range msgs {
			msgs[i] = map[string]any{"body": i}
		}
		h.Publish(key, "orders", msgs...)
	}

	b := newBrowser(t, h.BaseURL)
	b.open("/console/login")
	b.fill("#username", heraldtest.AdminUser)
	b.fill("#password", heraldtest.AdminPassword)
	b.submit("#login-submit")

	// stays is true while the page loaded at the mark has not been reloaded.
	mark := func() { eval[any](b, `window.__sameDocument = 1; 1`) }
	const stays = `window.__sameDocument === 1 && document.querySelector("#live").dataset.refreshed`

	b.open("/console/")
	require.Equal(t, "0", b.text("#total-lag"))
	mark()
	publish(7)
	b.waitJS(stays+` && document.querySelector("#total-lag").textContent === "7"`, 20*time.Second, "the overview's lag without a reload")
	b.waitJS(`document.querySelector('#live td.lag[data-group="billing"]').textContent === "7"`, 5*time.Second, "the group row too")

	b.open("/console/groups/billing")
	require.Equal(t, "7", b.text("#group-lag"))
	require.Contains(t, b.text("main"), "Lag per minute, last hour")
	require.True(t, eval[bool](b, `!!document.querySelector("#lag-chart svg") && !!document.querySelector("#throughput-chart svg")`))
	mark()
	publish(5)
	b.waitJS(stays+` && document.querySelector("#group-lag").textContent === "12"`, 20*time.Second, "the group's lag without a reload")
	b.waitJS(`document.querySelectorAll("#recent [data-id]").length === 12`, 5*time.Second, "its recent messages too")

	b.open("/console/topics/orders")
	const maxOffset = `document.querySelector("#live table tbody td:nth-child(5)").textContent`
	require.Equal(t, "12", eval[string](b, maxOffset))
	mark()
	publish(1)
	b.waitJS(stays+` && `+maxOffset+` === "13"`, 20*time.Second, "the topic's max offset without a reload")
	b.noInjectedMarkup()

	// The fragment request answers the live block alone, marked as such.
	req := mustGet(t, h.BaseURL+"/console/topics/orders")
	req.Header.Set("X-Herald-Live", "1")
	resp, err := newConsole(t, h).http.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "1", resp.Header.Get("X-Herald-Live"))
	frag := string(body)
	require.Regexp(t, `^\s*<div class="grid2">`, frag)
	require.NotContains(t, frag, "<html")
}
