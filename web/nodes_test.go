package web_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestConsoleNodes registers a node, changes its weight and retires it through the
// console's forms, and shows a refused DSN on its field.
func TestConsoleNodes(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	c := newConsole(t, h)
	dsn, _ := heraldtest.Database(t)

	f := c.form("/console/nodes", "node-create")
	f.Set("name", "data-2")
	f.Set("dsn", "root@tcp(127.0.0.1:1)/nothing")
	code, page := c.submit("/console/nodes", f)
	require.Equal(t, 422, code)
	require.Contains(t, page, "did not pass its check")

	f.Set("dsn", dsn)
	f.Set("weight", "40")
	code, page = c.submit("/console/nodes", f)
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "Node data-2 registered read-only.")
	var nodes struct {
		Items []struct {
			ID     int64
			Name   string
			Weight int
			State  string
		}
	}
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/nodes", nil, 200), &nodes))
	require.Len(t, nodes.Items, 2)
	n := nodes.Items[1]
	require.Equal(t, 40, n.Weight)
	require.Equal(t, "read-only", n.State)

	path := "/console/nodes/" + strconv.FormatInt(n.ID, 10)
	w := c.form("/console/nodes", "node-weight-"+strconv.FormatInt(n.ID, 10))
	w.Set("weight", "nine")
	code, page = c.submit(path+"/weight", w)
	require.Equal(t, 422, code)
	require.Contains(t, page, "whole number")
	w.Set("weight", "90")
	code, page = c.submit(path+"/weight", w)
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "now has weight 90")

	code, page = c.submit(path+"/retire", w)
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "Node data-2 retired.")
	code, page = c.submit(path+"/retire", w)
	require.Equal(t, 409, code)
	require.Contains(t, page, "retired and cannot change")
}
