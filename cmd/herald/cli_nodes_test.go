package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/heraldtest"
)

// TestCLINodes registers, lists, patches and retires a db node through the built
// binary; draining node 1 is refused with the server's reason; a topic moves
// (re-homed on node 1) and a second node drains. Nodes are named by id or name
// everywhere (node get, patch, open, close, drain, topic move --to).
func TestCLINodes(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	code, _, errOut := e.run(heraldtest.AdminPassword+"\n", nil, "login", "--username", heraldtest.AdminUser)
	require.Equal(t, 0, code, errOut)
	dsn, _ := heraldtest.Database(t)

	e.exit(exitUsage, "node", "add", "data-2")
	require.Contains(t, e.exit(exitInvalid, "node", "add", "data-2", "--dsn", dsn, "--state", "draining"), "/drain")
	code, out, errOut := e.run(dsn+"\n", nil, "node", "add", "data-2", "--dsn", "-", "--weight", "30", "--output", "json")
	require.Equal(t, 0, code, errOut)
	n := jsonOf[struct {
		ID     int64
		State  string
		Weight int
	}](t, out)
	require.Equal(t, "read-only", n.State)
	require.Equal(t, 30, n.Weight)
	id := itoa(n.ID)
	require.Regexp(t, `(?m)^ID\s+NAME\s+STATE\s+HEALTH`, e.ok("node", "list"))
	require.Regexp(t, `(?m)^1\s+primary\s+read-write\s+(up|unknown)\s`, e.ok("node", "list"))
	require.Regexp(t, `(?m)^`+id+`\s+data-2\s+read-only\s+(up|unknown)\s`, e.ok("node", "list"), "each node's health as the api sees it")

	e.exit(exitUsage, "node", "patch", id)
	require.Contains(t, e.exit(exitNotFound, "node", "patch", "two", "--weight", "2"), `no db node named "two"`)
	e.exit(exitUsage, "node", "get", "0")
	require.Contains(t, e.ok("node", "patch", "data-2", "--weight", "60", "--name", "data-two"), "data-two")
	require.Equal(t, n.ID, jsonOf[client.Node](t, e.ok("node", "get", "data-two", "--json")).ID)
	require.Equal(t, 60, jsonOf[client.Node](t, e.ok("node", "get", id, "--json")).Weight)
	require.Regexp(t, `(?m)^1\s+primary\s+read-write`, e.ok("node", "get", "primary"))
	// Names wherever ids are taken: open, close, drain, topic move --to.
	require.Contains(t, e.ok("node", "open", "data-two"), "read-write")
	require.Equal(t, "read-write", jsonOf[client.Node](t, e.ok("node", "get", id, "--json")).State)
	require.Contains(t, e.ok("node", "close", "data-two"), "read-only")
	require.Equal(t, "read-only", jsonOf[client.Node](t, e.ok("node", "get", id, "--json")).State)
	require.Contains(t, e.exit(exitInvalid, "node", "drain", "1"), "control database")
	require.Contains(t, e.ok("node", "drain", "data-two"), "draining")
	h.CreateTopic("moving", 2)
	e.exit(exitUsage, "topic", "move", "moving")
	require.Contains(t, e.exit(exitInvalid, "topic", "move", "moving", "--to", "99"), "unknown db node")
	require.Regexp(t, `(?m)^FROM-QUEUE\s+TO-QUEUE`, e.ok("topic", "move", "moving", "--to", "1"))
	require.Contains(t, e.exit(exitConflict, "topic", "move", "moving", "--to", "1"), "already moving")
	e.exit(exitNotFound, "node", "retire", "99")
	require.True(t, strings.Contains(e.ok("node", "retire", id), "retired"))
	require.Contains(t, e.exit(exitConflict, "node", "patch", id, "--weight", "1"), "retired")

	// topic move --to takes a node's name.
	dsn3, _ := heraldtest.Database(t)
	code, out, errOut = e.run(dsn3+"\n", nil, "node", "add", "data-3", "--dsn", "-", "--state", "read-write", "--json")
	require.Equal(t, 0, code, errOut)
	three := jsonOf[client.Node](t, out)
	h.CreateTopic("named", 1)
	e.exit(exitNotFound, "topic", "move", "named", "--to", "nowhere")
	e.ok("topic", "move", "named", "--to", "data-3")
	named := jsonOf[client.Topic](t, e.ok("topic", "get", "named", "--json"))
	onThree := false
	for _, q := range named.Queues {
		onThree = onThree || (q.Node == three.ID && q.State == "read_write")
	}
	require.True(t, onThree, "the moved topic writes to data-3: %+v", named.Queues)
}
