package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestCLINodes registers, lists, patches and retires a db node through the built
// binary; draining node 1 is refused with the server's reason; a topic moves
// (re-homed on node 1) and a second node drains.
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
	require.Regexp(t, `(?m)^ID\s+NAME\s+STATE`, e.ok("node", "list"))
	require.Regexp(t, `(?m)^1\s+primary\s+read-write`, e.ok("node", "list"))

	e.exit(exitUsage, "node", "patch", id)
	e.exit(exitUsage, "node", "patch", "two", "--weight", "2")
	require.Contains(t, e.ok("node", "patch", id, "--weight", "60", "--name", "data-two"), "data-two")
	require.Contains(t, e.exit(exitInvalid, "node", "drain", "1"), "control database")
	require.Contains(t, e.ok("node", "drain", id), "draining")
	h.CreateTopic("moving", 2)
	e.exit(exitUsage, "topic", "move", "moving")
	require.Contains(t, e.exit(exitInvalid, "topic", "move", "moving", "--to", "99"), "unknown db node")
	require.Regexp(t, `(?m)^FROM-QUEUE\s+TO-QUEUE`, e.ok("topic", "move", "moving", "--to", "1"))
	require.Contains(t, e.exit(exitConflict, "topic", "move", "moving", "--to", "1"), "already moving")
	e.exit(exitNotFound, "node", "retire", "99")
	require.True(t, strings.Contains(e.ok("node", "retire", id), "retired"))
	require.Contains(t, e.exit(exitConflict, "node", "patch", id, "--weight", "1"), "retired")
}
