package web_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestConsoleSchedules: the schedules page creates a schedule from its form (a
// bad expression is refused next to its field, nothing stored), lists it with its
// next three run times, pauses (no next runs), resumes and deletes it; each
// action is what the REST API then shows.
func TestConsoleSchedules(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("ops", 1)
	c := newConsole(t, h)

	form := c.form("/console/schedules", "schedule-create")
	form.Set("name", "beat")
	form.Set("topic", "ops")
	form.Set("cron", "every minute")
	form.Set("timezone", "Europe/Paris")
	form.Set("body", `{"beat": 1}`)
	code, page := c.submit("/console/schedules", form)
	require.Equal(t, 422, code, page)
	require.Regexp(t, `id="sc-cron"[^>]*>\s*<div class="field-error">`, page, "the message is next to the field")
	h.Admin("GET", "/schedules/beat", nil, 404)

	form.Set("cron", "*/5 * * * *")
	code, page = c.submit("/console/schedules", form)
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "Schedule beat created; first run ")
	row := regexp.MustCompile(`(?s)<tr id="schedule-beat">.*?</tr>`).FindString(page)
	require.NotEmpty(t, row, page)
	require.Len(t, regexp.MustCompile(`<div>\d{4}-\d\d-\d\dT`).FindAllString(row, -1), 3, "three next runs: %s", row)
	var sc map[string]any
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/schedules/beat", nil, 200), &sc))
	require.Equal(t, "Europe/Paris", sc["timezone"])
	require.JSONEq(t, `{"beat": 1}`, string(mustJSON(t, sc["body"])))
	require.Equal(t, "application/json", sc["content_type"])

	csrf := c.form("/console/schedules", "schedule-create").Get("_csrf")
	for _, step := range []struct{ action, state, notice string }{
		{"pause", "paused", "Schedule beat paused."},
		{"resume", "active", "Schedule beat resumed."},
	} {
		code, page = c.submit("/console/schedules/beat/"+step.action, map[string][]string{"_csrf": {csrf}})
		require.Equal(t, 200, code, page)
		require.Contains(t, page, step.notice)
		require.NoError(t, json.Unmarshal(h.Admin("GET", "/schedules/beat", nil, 200), &sc))
		require.Equal(t, step.state, sc["state"])
	}
	code, page = c.submit("/console/schedules/beat/delete", map[string][]string{"_csrf": {csrf}})
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "No schedules yet.")
	h.Admin("GET", "/schedules/beat", nil, 404)
}

// TestConsoleDelayedMessages: a delayed message shows on its topic's page among
// those waiting, its own page shows its due time, and cancelling it there
// deletes it (the API then answers 404 for it).
func TestConsoleDelayedMessages(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("reminders", 1)
	key := h.CreateAPIKey("reminders")
	p := h.Publish(key, "reminders", map[string]any{"body": map[string]int{"user": 7}, "delay_seconds": 3600, "tag": "remind"})[0]
	c := newConsole(t, h)

	page := c.get("/console/topics/reminders")
	require.Contains(t, page, "Delayed messages waiting (1)")
	require.Contains(t, page, `href="/console/messages/`+p.ID+`"`)
	page = c.get("/console/messages/" + p.ID)
	require.Contains(t, page, `<td id="deliver-at">`+p.DeliverAt+`</td>`)
	form := c.form("/console/messages/"+p.ID, "cancel")
	code, page := c.submit("/console/messages/"+p.ID+"/cancel", form)
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "Delayed message "+p.ID+" cancelled")
	require.NotContains(t, page, "Delayed messages waiting")
	h.Admin("GET", "/messages/"+p.ID, nil, 404)
	req, err := http.NewRequest("GET", h.BaseURL+"/console/messages/"+p.ID, nil)
	require.NoError(t, err)
	code, _ = c.do(req)
	require.Equal(t, http.StatusNotFound, code)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
