package web_test

import (
	"html"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestConsoleAuditReadable: a settings save from the console and a pause are
// audited; the audit page says in a sentence what changed, lists each changed field
// as before → after and folds the unchanged ones (every recorded value is on the
// page), and shows no raw JSON.
func TestConsoleAuditReadable(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("orders", 1)
	h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": "http://8.8.8.8/hook", "subscriptions": []map[string]any{{"topic": "orders", "tags": []string{"created"}}}})
	c := newConsole(t, h)

	form := c.form("/console/groups/billing", "settings")
	form.Set("rate_limit", "7")
	form.Set("ordering", "queue")
	code, page := c.submit("/console/groups/billing/settings", form)
	require.Equal(t, 200, code, page)

	table := html.UnescapeString(find(t, c.get("/console/audit?action=group.update"), `(?s)<table id="audit">(.*?)</table>`))
	require.Equal(t, 1, strings.Count(table, "<code>group.update</code>"))
	require.Contains(t, table, "Changed ordered from false to true, changed ordering from (empty) to queue, changed rate_limit from 0 to 7.")
	changed := find(t, table, `(?s)<p class="audit-summary">.*?</p>\s*(<ul class="audit-fields">.*?</ul>)`)
	for _, f := range []string{`<span class="mono">rate_limit</span>: 0 → 7`, `<span class="mono">ordering</span>: (empty) → queue`, `<span class="mono">ordered</span>: false → true`} {
		require.Contains(t, changed, f)
	}
	kept := find(t, table, `(?s)<details><summary>(\d+ unchanged)</summary>`)
	require.NotEqual(t, "0 unchanged", kept)
	require.Contains(t, table, `<span class="mono">endpoint_url</span>: http://8.8.8.8/hook`, "unchanged values are still shown")
	require.Contains(t, table, `<span class="mono">subscriptions.0.tags.0</span>: created`, "nested values by path")
	require.NotContains(t, table, `{"`, "no raw JSON")

	h.Admin("POST", "/groups/billing/pause", nil, 200)
	table = html.UnescapeString(find(t, c.get("/console/audit?action=group.paused"), `(?s)<table id="audit">(.*?)</table>`))
	require.Contains(t, table, "Changed status from running to paused.")
	require.Contains(t, table, `<span class="mono">status</span>: running → paused`)

	table = html.UnescapeString(find(t, c.get("/console/audit?action=group.create"), `(?s)<table id="audit">(.*?)</table>`))
	require.Contains(t, table, `<span class="mono">name</span>: billing`, "a creation lists what it recorded")
	require.NotContains(t, table, " → ")
}
