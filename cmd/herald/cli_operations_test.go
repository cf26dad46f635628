package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// apiRoutes reads the REST route table (api/routes.go's routeTable) as "METHOD /path".
func apiRoutes(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../api/routes.go")
	require.NoError(t, err)
	var out []string
	defer func() {
		require.Equal(t, strings.Count(string(b), ", (*Server)."), len(out), "every route of api/routes.go is read")
	}()
	for _, m := range regexp.MustCompile(`\{http\.Method(\w+), "([^"]+)", \(\*Server\)\.`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, map[string]string{"Get": "GET", "Post": "POST", "Patch": "PATCH", "Delete": "DELETE", "Put": "PUT"}[m[1]]+" "+m[2])
	}
	return out
}

// TestEveryAPIOperationHasACommand: each operation of the route table is called by
// a herald command (commandOperations), each operation named there exists, and
// each command over HTTP names what it calls. A new route without a command fails
// here.
func TestEveryAPIOperationHasACommand(t *testing.T) {
	t.Parallel()
	routes := apiRoutes(t)
	require.NotEmpty(t, routes)
	called := map[string]bool{}
	for _, ops := range commandOperations {
		for _, op := range ops {
			called[op] = true
		}
	}
	known := map[string]bool{}
	for _, r := range routes {
		known[r] = true
		require.True(t, called[r], "no herald command calls %s: add one and list it in commandOperations", r)
	}
	for cmd, ops := range commandOperations {
		for _, op := range ops {
			require.True(t, known[op], "%s: %s is not in api/routes.go", cmd, op)
		}
	}
	names := map[string]bool{}
	for _, c := range httpCommands() {
		names[c.name] = true
		require.NotEmpty(t, commandOperations[c.name], "herald %s names no REST operation in commandOperations", c.name)
	}
	for cmd := range commandOperations {
		require.True(t, names[cmd], "commandOperations names %q, which is no command", cmd)
	}
}
