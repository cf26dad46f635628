package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/heraldtest"
)

// TestCLIUsersAuditPushKeysAndServer drives, through the built binary: users by
// username (create, patch, revoke tokens, delete), the audit log that records
// them, push keys (list, rotate), the probes and the OpenAPI document, and
// refresh; each change checked through the API.
func TestCLIUsersAuditPushKeysAndServer(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	code, _, errOut := e.run(heraldtest.AdminPassword+"\n", nil, "login", "--username", heraldtest.AdminUser)
	require.Equal(t, 0, code, errOut)

	// Users, by username.
	e.exit(exitUsage, "users", "create", "vera")
	code, out, errOut := e.run("long-enough-pw\n", nil, "users", "create", "vera", "--role", "viewer", "--json")
	require.Equal(t, 0, code, errOut)
	vera := jsonOf[client.User](t, out)
	require.Equal(t, "viewer", vera.Role)
	viewer := newCLIEnv(t, h.BaseURL)
	code, _, errOut = viewer.run("long-enough-pw\n", nil, "login", "--username", "vera")
	require.Equal(t, 0, code, errOut)
	viewer.ok("topic", "list")
	require.Regexp(t, `(?m)^\d+\s+vera\s+viewer`, e.ok("users", "list"))
	e.exit(exitUsage, "users", "patch", "vera")
	require.Contains(t, e.ok("users", "patch", "vera", "--role", "operator"), "operator")
	viewer.exit(exitUnauthorized, "topic", "list") // a role change revoked vera's token
	code, _, errOut = viewer.run("long-enough-pw\n", nil, "login", "--username", "vera")
	require.Equal(t, 0, code, errOut)
	viewer.ok("topic", "create", "by-vera") // operator now
	code, _, errOut = e.run("", []string{"HERALD_NEW_PASSWORD=another-long-pw"}, "users", "patch", itoa(vera.ID), "--password")
	require.Equal(t, 0, code, errOut)
	code, _, _ = viewer.run("long-enough-pw\n", nil, "login", "--username", "vera")
	require.Equal(t, exitUnauthorized, code, "the old password no longer works")
	code, _, errOut = viewer.run("another-long-pw\n", nil, "login", "--username", "vera")
	require.Equal(t, 0, code, errOut)
	e.ok("users", "revoke-tokens", "vera")
	viewer.exit(exitUnauthorized, "topic", "list")
	viewer.exit(exitUnauthorized, "users", "list")
	e.exit(exitNotFound, "users", "delete", "nobody")
	require.Contains(t, e.ok("users", "delete", "vera"), "deleted")
	require.NotContains(t, e.ok("users", "list"), "vera")

	// The audit log names those changes.
	entries := jsonOf[[]client.AuditEntry](t, e.ok("audit-log", "list", "--action", "user.", "--json"))
	var actions []string
	for _, a := range entries {
		actions = append(actions, a.Action)
	}
	require.Contains(t, actions, "user.create")
	require.Contains(t, actions, "user.delete")
	require.Regexp(t, `(?m)^\d+\s+\S+\s+`+heraldtest.AdminUser+`\s+user\.delete`, e.ok("audit-log", "list", "--actor", heraldtest.AdminUser))
	_, _, errOut = e.run("", nil, "audit-log", "list", "--limit", "1")
	require.Contains(t, errOut, "--cursor")

	// Push keys: a rotation publishes a new key first.
	before := jsonOf[[]client.JWK](t, e.ok("push-key", "list", "--json"))
	require.NotEmpty(t, before)
	rot := jsonOf[client.PushKeyRotation](t, e.ok("push-key", "rotate", "--json"))
	after := jsonOf[[]client.JWK](t, e.ok("push-key", "list", "--json"))
	require.NotEqual(t, before[0].Kid, rot.KeyID)
	var kids []string
	for _, k := range after {
		kids = append(kids, k.Kid)
	}
	require.Contains(t, kids, rot.KeyID)
	require.Contains(t, kids, before[0].Kid, "the old key stays published")

	// Probes, the OpenAPI document, and refresh.
	require.Equal(t, "ok\n", e.ok("server", "health"))
	require.Regexp(t, `(?m)^api\s+ready$`, e.ok("server", "ready"))
	require.True(t, strings.HasPrefix(e.ok("server", "openapi"), "openapi:"))
	e.exit(exitUnavailable, "server", "ready", "--url", "http://127.0.0.1:1")
	require.Contains(t, e.ok("refresh"), heraldtest.AdminUser)
	e.ok("topic", "list")
	require.Contains(t, e.exit(exitUnauthorized, "refresh", "--url", strings.Replace(h.BaseURL, "127.0.0.1", "localhost", 1)),
		"the stored token is for")
}
