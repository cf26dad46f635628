package web_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestConsoleTopicMove: the topic page's move form moves the topic (to node 1, onto
// fresh queues); with no dispatcher running, the old queues stay owed and the page
// lists what each group still owes them; a second move and an unknown node are
// refused on the page.
func TestConsoleTopicMove(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("orders", 2)
	h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": "http://8.8.8.8/hook", "subscriptions": []map[string]any{{"topic": "orders"}},
		"consume_from": "earliest"})
	h.Publish(h.CreateAPIKey("orders"), "orders", map[string]any{"body": 1}, map[string]any{"body": 2})
	c := newConsole(t, h)

	form := c.form("/console/topics/orders", "move")
	require.Equal(t, "1", form.Get("to_node"))
	form.Set("to_node", "42")
	code, page := c.submit("/console/topics/orders/move", form)
	require.Equal(t, 422, code)
	require.Contains(t, page, "unknown db node")

	form.Set("to_node", "1")
	code, page = c.submit("/console/topics/orders/move", form)
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "is moving to node 1")
	require.Regexp(t, `id="moves"[\s\S]*billing`, page, "the page lists what billing owes the old queues")

	code, page = c.submit("/console/topics/orders/move", form)
	require.Equal(t, 422, code)
	require.Contains(t, page, "already moving")
}
