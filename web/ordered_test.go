package web

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

// TestGroupPageShowsBlockedQueues renders an ordered group's page with a paused
// queue: the blocked message, its attempts and the skip and resume actions show.
func TestGroupPageShowsBlockedQueues(t *testing.T) {
	t.Parallel()
	p, err := ParsePages()
	require.NoError(t, err)
	page := groupPage{G: groupView{Group: &models.Group{Name: "billing", Ordered: true, Status: models.GroupRunning}},
		Form: map[string]string{"ordered_on_exhausted": "pause"}, Errors: map[string]string{},
		Blocked: blockedViews([]models.OrderedBlock{{GroupID: 1, QueueID: 7, Offset: 42, Count: 1, Attempts: 3, Paused: true, LastError: "http_status 500"},
			{GroupID: 1, QueueID: 8, Offset: 9, Count: 2, Attempts: 1, NextAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), LastError: "timeout"}})}
	var buf bytes.Buffer
	require.NoError(t, p.Render(&buf, "group", map[string]any{"Title": "Group billing", "Page": page, "CanOperate": true, "CSRF": "tok"}))
	out := buf.String()
	require.Contains(t, out, "msg_7_42")
	require.Contains(t, out, `id="skip-7"`)
	require.Contains(t, out, `id="resume-8"`)
	require.Contains(t, out, "2026-01-02 03:04:05.000")
	require.Contains(t, out, `<option value="pause" selected>`)
}
