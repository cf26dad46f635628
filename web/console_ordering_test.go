package web_test

import (
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// orderingShown is what a group's page says of its ordering: the live part's
// badge (data-ordering), the settings form's chosen ordering and the exhaustion
// setting's label and pause option.
func orderingShown(t *testing.T, page string) (badge, chosen, label, pause string) {
	t.Helper()
	badge = find(t, page, `id="group-ordering" data-ordering="([^"]*)"`)
	chosen = find(t, page, `(?s)<select id="s-ordering" name="ordering"[^>]*>.*?<option value="([^"]*)"\s+selected`)
	label = find(t, page, `<label for="s-exhausted">([^<]*)</label>`)
	pause = find(t, page, `<option value="pause"[^>]*>([^<]*)</option>`)
	return badge, chosen, html.UnescapeString(label), html.UnescapeString(pause)
}

// TestConsoleCreatesGroupsByOrdering: the console's create form offers not
// ordered, by key and by queue; each creates the group the API reports (ordered
// and ordering), with the exhaustion choice given, and the group's page names its
// mode and speaks of the key's or the queue's head. An unknown choice is refused
// next to the field and creates nothing.
func TestConsoleCreatesGroupsByOrdering(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("orders", 1)
	c := newConsole(t, h)

	page := c.get("/console/groups")
	sel := find(t, page, `(?s)(<select id="g-ordering" name="ordering"[^>]*>.*?</select>)`)
	require.Regexp(t, `<label for="g-ordering">`, page, "the control has a label")
	for _, v := range []string{"none", "key", "queue"} {
		require.Contains(t, sel, `<option value="`+v+`"`)
	}
	require.Contains(t, sel, "a failure holds only its key")
	require.Contains(t, sel, "a failure holds its whole queue")
	require.Regexp(t, `<label for="g-exhausted">`, page)
	help := html.UnescapeString(find(t, page, `(?s)<ul class="muted" id="g-ordering-help">(.*?)</ul>`))
	require.Contains(t, help, "one POST per key at a time")
	require.Contains(t, help, "keyless messages are not ordered")
	require.Contains(t, help, "one POST per queue at a time, in offset order")

	for _, tc := range []struct {
		choice, exhausted   string
		ordered             bool
		ordering            string
		name, label, paused string
	}{
		{"none", "dead_letter", false, "", "not ordered", "applies once the group is ordered", "pause its key (or queue) for an operator"},
		{"key", "pause", true, "key", "ordered by key", "When a key's head message exhausts its attempts", "pause the key for an operator"},
		{"queue", "pause", true, "queue", "ordered by queue", "When a queue's head message exhausts its attempts", "pause the queue for an operator"},
	} {
		group := "g-" + tc.choice
		form := c.form("/console/groups", "group-create")
		form.Set("name", group)
		form.Set("endpoint_url", "http://8.8.8.8/hook")
		form.Set("subscriptions", "orders")
		form.Set("ordering", tc.choice)
		form.Set("ordered_on_exhausted", tc.exhausted)
		code, page := c.submit("/console/groups", form)
		require.Equal(t, 200, code, page)
		require.Contains(t, page, "Group "+group+" created", tc.choice)

		g := groupSettings(t, h, group)
		require.Equal(t, tc.ordered, g["ordered"], tc.choice)
		require.Equal(t, tc.ordering, g["ordering"], tc.choice)
		if tc.ordered {
			require.Equal(t, tc.exhausted, g["ordered_on_exhausted"], tc.choice)
		}
		badge, chosen, label, pause := orderingShown(t, page)
		require.Equal(t, tc.choice, badge, "the group page names its ordering")
		require.Contains(t, page, `data-ordering="`+tc.choice+`">`+tc.name+`</span>`)
		require.Equal(t, tc.choice, chosen, "the settings form shows it")
		require.Contains(t, label, tc.label)
		require.Equal(t, tc.paused, pause)
	}

	form := c.form("/console/groups", "group-create")
	form.Set("name", "g-odd")
	form.Set("endpoint_url", "http://8.8.8.8/hook")
	form.Set("subscriptions", "orders")
	form.Set("ordering", "tag")
	code, page := c.submit("/console/groups", form)
	require.Equal(t, 422, code)
	require.Regexp(t, `(?s)id="g-ordering".*?</select><div class="field-error">choose not ordered, by key or by queue`, page)
	h.Admin("GET", "/groups/g-odd", nil, 404)
}

// TestConsoleSettingsChangeOrdering: the settings form moves a group from not
// ordered to ordered by queue, then by key, then back to not ordered, each as the
// API reports it; a save that edits another field keeps the ordering.
func TestConsoleSettingsChangeOrdering(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("orders", 1)
	h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": "http://8.8.8.8/hook", "subscriptions": []map[string]any{{"topic": "orders"}}})
	c := newConsole(t, h)

	for _, tc := range []struct {
		choice   string
		ordered  bool
		ordering string
		head     string
	}{
		{"queue", true, "queue", "queue's head"},
		{"key", true, "key", "key's head"},
		{"none", false, "", "once the group is ordered"},
	} {
		form := c.form("/console/groups/billing", "settings")
		form.Set("ordering", tc.choice)
		code, page := c.submit("/console/groups/billing/settings", form)
		require.Equal(t, 200, code, page)
		require.Contains(t, page, "Settings saved", tc.choice)
		g := groupSettings(t, h, "billing")
		require.Equal(t, tc.ordered, g["ordered"], tc.choice)
		require.Equal(t, tc.ordering, g["ordering"], tc.choice)
		badge, chosen, label, _ := orderingShown(t, page)
		require.Equal(t, tc.choice, badge)
		require.Equal(t, tc.choice, chosen)
		require.Contains(t, label, tc.head)
	}

	h.Admin("PATCH", "/groups/billing", map[string]any{"ordered": true, "ordering": "queue"}, 200)
	form := c.form("/console/groups/billing", "settings")
	require.Equal(t, "queue", form.Get("ordering"))
	form.Set("rate_limit", "3")
	code, page := c.submit("/console/groups/billing/settings", form)
	require.Equal(t, 200, code, page)
	g := groupSettings(t, h, "billing")
	require.EqualValues(t, 3, g["rate_limit"])
	require.Equal(t, "queue", g["ordering"], "a save of another field keeps the ordering")

	form.Set("ordering", "sideways")
	code, page = c.submit("/console/groups/billing/settings", form)
	require.Equal(t, 422, code)
	require.Regexp(t, `(?s)id="s-ordering".*?</select><div class="field-error">choose not ordered, by key or by queue`, page)
	require.Equal(t, "queue", groupSettings(t, h, "billing")["ordering"], "nothing saved")
}

// TestConsoleBadgesBlockedHeads: a group ordered by key and one ordered by queue
// read one topic; their endpoints fail the message marked "fail" and pause on
// exhaustion. On each group's page that head is badged blocked (never pending).
// Ordered by key, the same key's next message waits (pending) and another key's
// message is delivered; ordered by queue, both wait behind the head.
func TestConsoleBadgesBlockedHeads(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("ledger", 1)
	failing := func(d heraldtest.Delivery) int {
		if strings.Contains(string(d.Body), `"fail"`) {
			return 500
		}
		return 204
	}
	for _, ordering := range []string{"key", "queue"} {
		recv := heraldtest.NewReceiver(t)
		recv.Respond = failing
		recv.SetSecret(h.CreateGroup(map[string]any{"name": "by-" + ordering, "endpoint_url": recv.URL, "consume_from": "earliest",
			"ordered": true, "ordering": ordering, "ordered_on_exhausted": "pause", "max_attempts": 1, "batch_size": 1,
			"subscriptions": []map[string]any{{"topic": "ledger"}}}))
	}
	msgs := h.Publish(h.CreateAPIKey("ledger"), "ledger",
		map[string]any{"key": "customer-1", "body": "fail"},
		map[string]any{"key": "customer-1", "body": "next"},
		map[string]any{"key": "customer-2", "body": "other"})
	head, behind, other := msgs[0].ID, msgs[1].ID, msgs[2].ID
	c := newConsole(t, h)
	badge := func(page, id string) string {
		m := regexp.MustCompile(`data-id="` + id + `">([a-z]+)<`).FindStringSubmatch(page)
		if m == nil {
			return ""
		}
		return m[1]
	}

	var page string
	require.Eventually(t, func() bool { // the owner records the block at the head's failure
		page = c.get("/console/groups/by-key")
		return badge(page, head) == "blocked" && badge(page, other) == "delivered"
	}, 20*time.Second, 50*time.Millisecond, "ordered by key: the key's head is blocked, another key is delivered")
	require.Regexp(t, `id="blocked-keys">.*`, page)
	require.Equal(t, "pending", badge(page, behind), "the key's next message waits behind its head")

	require.Eventually(t, func() bool {
		page = c.get("/console/groups/by-queue")
		return badge(page, head) == "blocked"
	}, 20*time.Second, 50*time.Millisecond, "ordered by queue: the queue's head is blocked")
	require.Equal(t, "pending", badge(page, behind))
	require.Equal(t, "pending", badge(page, other), "ordered by queue, every later message waits")
}
