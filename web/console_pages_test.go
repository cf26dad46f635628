package web_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestConsoleNumberSettingFields: the group settings form shows the group's
// dead-letter retention and throttle limit, refuses values the API refuses with a
// message next to the field, saves a new value, and a save that edits another field
// keeps it.
func TestConsoleNumberSettingFields(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field, id   string
		first, next int
		bad         []string
	}{
		{"dead_letter_retention_hours", "s-dlq-retention", 48, 72, []string{"9000", "-1", "two days"}},
		{"max_throttles", "s-throttles", 7, 3, []string{"0", "1001", "many"}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			t.Parallel()
			h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
			h.CreateTopic("orders", 1)
			h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": "http://8.8.8.8/hook", "subscriptions": []map[string]any{{"topic": "orders"}},
				tc.field: tc.first})
			c := newConsole(t, h)

			form := c.form("/console/groups/billing", "settings")
			require.Equal(t, strconv.Itoa(tc.first), form.Get(tc.field), "shown")
			for _, bad := range tc.bad {
				form.Set(tc.field, bad)
				code, page := c.submit("/console/groups/billing/settings", form)
				require.Equal(t, 422, code, bad)
				require.Regexp(t, `id="`+tc.id+`"[^>]*>\s*<div class="field-error">`, page, "%s: the message is next to the field", bad)
				require.EqualValues(t, tc.first, groupSettings(t, h, "billing")[tc.field], "%s: nothing saved", bad)
			}
			form = c.form("/console/groups/billing", "settings")
			form.Set(tc.field, strconv.Itoa(tc.next))
			code, page := c.submit("/console/groups/billing/settings", form)
			require.Equal(t, 200, code, page)
			require.Contains(t, page, "Settings saved")
			require.EqualValues(t, tc.next, groupSettings(t, h, "billing")[tc.field])

			form = c.form("/console/groups/billing", "settings")
			form.Set("rate_limit", "5")
			code, page = c.submit("/console/groups/billing/settings", form)
			require.Equal(t, 200, code, page)
			g := groupSettings(t, h, "billing")
			require.EqualValues(t, 5, g["rate_limit"])
			require.EqualValues(t, tc.next, g[tc.field], "a save of another field keeps it")
		})
	}
}

// TestConsoleResetHasNoDefault: the offset reset form preselects no destination and
// says what each one does; sent as shown it is refused with a message on the field
// and moves no cursor.
func TestConsoleResetHasNoDefault(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("orders", 1)
	h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": "http://8.8.8.8/hook", "subscriptions": []map[string]any{{"topic": "orders"}}})
	h.Publish(h.CreateAPIKey("orders"), "orders", map[string]any{"body": 1}, map[string]any{"body": 2})
	c := newConsole(t, h)
	audit := func() int {
		return strings.Count(string(h.Admin("GET", "/audit-log?action=group.offsets.reset", nil, 200)), `"group.offsets.reset"`)
	}

	page := c.get("/console/groups/billing")
	sel := find(t, page, `(?s)(<select id="r-to".*?</select>)`)
	require.Regexp(t, `<option value="" selected disabled>`, sel, "nothing chosen")
	require.NotRegexp(t, `value="(earliest|latest|timestamp)"\s+selected`, sel)
	for _, word := range []string{"skip the backlog", "a full replay", "deliver again every message published at or after it"} {
		require.Contains(t, sel, word, "each choice says what it does")
	}
	form := c.form("/console/groups/billing", "reset")
	require.Equal(t, "", form.Get("to"))
	code, page := c.submit("/console/groups/billing/reset", form)
	require.Equal(t, 422, code)
	require.Regexp(t, `(?s)id="r-to".*?</select><div class="field-error">must be earliest, latest or timestamp`, page)
	require.Zero(t, audit(), "no cursor moved")

	form.Set("to", "latest")
	code, page = c.submit("/console/groups/billing/reset", form)
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "reset to latest")
	require.Equal(t, 1, audit())
}

// TestConsoleAttemptsAndBatches: a group sending batches of three to an endpoint that
// fails one batch. The message page names the group of each attempt and links its
// batch; the batch's page (by its bat_ id) shows the group, its member messages and
// their attempts; the group page searches attempts with the API's filters and shows
// a bad filter next to its field.
func TestConsoleAttemptsAndBatches(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	recv := heraldtest.NewReceiver(t)
	recv.Respond = func(d heraldtest.Delivery) int {
		if strings.Contains(string(d.Body), `"fail"`) {
			return 500
		}
		return 204
	}
	h.CreateTopic("orders", 1)
	recv.SetSecret(h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": recv.URL, "consume_from": "earliest",
		"batch_size": 3, "batch_window_ms": 1000, "max_attempts": 1, "subscriptions": []map[string]any{{"topic": "orders"}}}))
	key := h.CreateAPIKey("orders")
	ok := h.Publish(key, "orders", map[string]any{"body": 1}, map[string]any{"body": 2}, map[string]any{"body": 3})
	recv.WaitCount(1, 20*time.Second)
	bad := h.Publish(key, "orders", map[string]any{"body": "fail"}, map[string]any{"body": 5}, map[string]any{"body": 6})
	c := newConsole(t, h)

	var page string
	require.Eventually(t, func() bool { // workers write attempt rows within a second
		page = c.get("/console/messages/" + bad[0].ID)
		return strings.Contains(page, "bat_")
	}, 20*time.Second, 100*time.Millisecond, "the failed batch's attempt is recorded")
	require.Contains(t, page, `<td class="group"><a href="/console/groups/billing">billing</a></td>`, "the attempt names its group")
	batch := find(t, page, `href="/console/messages/(bat_[a-z2-7]{26})"`)

	page = c.get("/console/messages/" + batch)
	require.Equal(t, batch, find(t, page, `id="batch-id">([^<]*)<`))
	require.Contains(t, find(t, page, `(?s)id="batch-group">(.*?)</td>`), "billing")
	var members []string
	for _, m := range regexp.MustCompile(`>(msg_\d+_\d+)</a>`).FindAllStringSubmatch(find(t, page, `(?s)id="batch-messages">(.*?)</td>`), -1) {
		members = append(members, m[1])
	}
	require.Equal(t, []string{bad[0].ID, bad[1].ID, bad[2].ID}, members)
	require.Equal(t, 3, strings.Count(page, "<td>500</td>"), "one attempt row per member")
	code, _ := c.do(mustGet(t, h.BaseURL+"/console/messages/bat_aaaaaaaaaaaaaaaaaaaaaaaaaa"))
	require.Equal(t, 404, code, "a batch never sent is not found")

	// The group page's attempt search: the API's filters through the same query.
	require.Eventually(t, func() bool {
		return strings.Count(c.get("/console/groups/billing?status_class=2xx"), "<td>204</td>") == 3
	}, 10*time.Second, 100*time.Millisecond, "the delivered batch's attempts")
	page = c.get("/console/groups/billing?status_class=5xx")
	list := find(t, page, `(?s)id="attempt-list">(.*?)</table>`)
	require.Equal(t, 3, strings.Count(list, "<td>500</td>"))
	require.NotContains(t, list, "<td>204</td>")
	for _, m := range ok {
		require.NotContains(t, list, m.ID)
	}
	page = c.get("/console/groups/billing?error_class=http_status&limit=2")
	require.Equal(t, 2, strings.Count(find(t, page, `(?s)id="attempt-list">(.*?)</table>`), "<td>500</td>"))
	next := find(t, page, `href="([^"]+)" id="attempts-next"`)
	require.Equal(t, 1, strings.Count(find(t, c.get(strings.ReplaceAll(next, "&amp;", "&")), `(?s)id="attempt-list">(.*?)</table>`), "<td>500</td>"), "the older page")
	page = c.get("/console/groups/billing?error_class=nope&since=yesterday")
	require.Regexp(t, `(?s)id="a-error".*?</select><div class="field-error">must be one of`, page)
	require.Regexp(t, `id="a-since"[^>]*><div class="field-error">must be an RFC 3339 time`, page)
}
