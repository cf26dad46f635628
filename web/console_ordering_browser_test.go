package web_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestConsoleOrderingInBrowser: in headless Chromium, choosing an ordering on the
// create form rewords the exhaustion setting for the key's or the queue's head at
// once, and the group created by queue shows its ordering on its page.
func TestConsoleOrderingInBrowser(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("ledger", 1)
	b := newBrowser(t, h.BaseURL)
	b.open("/console/login")
	b.fill("#username", heraldtest.AdminUser)
	b.fill("#password", heraldtest.AdminPassword)
	b.submit("#login-submit")

	b.open("/console/groups")
	require.Equal(t, "none", eval[string](b, `document.querySelector("#g-ordering").value`), "not ordered unless chosen")
	b.fill("#g-ordering", "key")
	require.Equal(t, "When a key's head message exhausts its attempts", b.text(`label[for="g-exhausted"]`))
	require.Equal(t, "pause the key for an operator", b.text(`#g-exhausted option[value="pause"]`))
	b.fill("#g-ordering", "queue")
	require.Equal(t, "When a queue's head message exhausts its attempts", b.text(`label[for="g-exhausted"]`))
	require.Equal(t, "dead-letter it; the queue moves on", b.text(`#g-exhausted option[value="dead_letter"]`))

	b.fill("#g-name", "journal")
	b.fill("#g-url", "http://8.8.8.8/hook")
	b.fill("#g-subs", "ledger")
	b.fill("#g-exhausted", "pause")
	b.submit("#group-create button")
	require.Equal(t, "ordered by queue", b.text("#group-ordering"))
	g := groupSettings(t, h, "journal")
	require.Equal(t, "queue", g["ordering"])
	require.Equal(t, "pause", g["ordered_on_exhausted"])
	b.shot("group-ordered-by-queue")
}
