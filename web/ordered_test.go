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

// TestGroupPageShowsBlockedKeys renders a group ordered by key with a paused key:
// the key, its blocked message, the count of all blocked keys and the skip and
// resume forms naming the key and its queue show, and no blocked-queue table.
func TestGroupPageShowsBlockedKeys(t *testing.T) {
	t.Parallel()
	p, err := ParsePages()
	require.NoError(t, err)
	page := groupPage{G: groupView{Group: &models.Group{Name: "billing", Ordered: true, Ordering: models.OrderingKey, Status: models.GroupRunning}},
		Form: map[string]string{}, Errors: map[string]string{}, BlockedKeyCount: 120,
		BlockedKeys: blockedKeyViews([]models.OrderedKeyBlock{{GroupID: 1, QueueID: 7, Key: "customer-<9>", Offset: 42, Count: 1, Attempts: 3, Paused: true, LastError: "http_status 500"}})}
	var buf bytes.Buffer
	require.NoError(t, p.Render(&buf, "group", map[string]any{"Title": "Group billing", "Page": page, "CanOperate": true, "CSRF": "tok"}))
	out := buf.String()
	require.Contains(t, out, "msg_7_42")
	require.Contains(t, out, "customer-&lt;9&gt;")
	require.Contains(t, out, "120 blocked; the first 1 by queue and key")
	require.Contains(t, out, `action="/console/groups/billing/blocked-keys/skip"`)
	require.Contains(t, out, `name="queue" value="7"`)
	require.NotContains(t, out, `id="blocked"`)
}
