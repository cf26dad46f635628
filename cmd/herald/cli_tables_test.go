package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestCLITables: the table output shows what an operator looks for: every setting
// of a group in `group get`, each group's lag in `group list`, each queue's db
// node in `topic get`, and a node's health in `node list` (- with one node).
func TestCLITables(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	e.env = append(e.env, "HERALD_TOKEN="+h.Token())
	e.ok("topic", "create", "orders", "--queues", "2")
	recv := heraldtest.NewReceiver(t)
	e.ok("group", "create", "billing", "--endpoint", recv.URL, "--subscribe", "orders:created", "--filter", `orders=attributes.x-region = "eu"`,
		"--batch-size", "5", "--rate-limit", "20", "--retry-schedule", "5,60", "--ordered", "--ordering", "queue",
		"--header", "x-api-key=k1", "--basic-auth", "bob:pw", "--dead-letter-retention-hours", "48", "--consume-from", "earliest")

	get := e.ok("group", "get", "billing")
	for _, row := range []string{
		`endpoint\s+` + recv.URL, `subscriptions\s+orders:created filter "attributes.x-region = \\"eu\\""`, `batch-size\s+5`,
		`batch-max-bytes\s+\d+`, `batch-window-ms\s+0`, `max-in-flight\s+\d+`, `rate-limit\s+20/s`, `timeout-ms\s+\d+`,
		`max-attempts\s+\d+`, `retry-schedule\s+5s,60s`, `ordering\s+by queue, on exhausted attempts: dead_letter`,
		`consume-from\s+earliest`, `dead-letter-retention-hours\s+48`, `headers\s+x-api-key=\*{8}`, `basic-auth\s+bob:\*{8}`,
		`push-auth\s+off`, `status\s+running`, `config-version\s+\d+`,
	} {
		require.Regexp(t, `(?m)^`+row+`$`, get)
	}
	require.NotContains(t, get, "signing-secret")
	require.Regexp(t, `(?m)^signing-secret\s+whsec_`, e.ok("group", "get", "billing", "--show-secret"))

	// Lag: a paused group falls behind by what is published.
	e.ok("group", "pause", "billing")
	key := h.CreateAPIKey("orders")
	for range 3 {
		h.Publish(key, "orders", map[string]any{"body": map[string]int{"n": 1}, "tag": "created", "headers": map[string]string{"x-region": "eu"}})
	}
	require.Regexp(t, `(?m)^NAME\s+STATUS\s+LAG\s+LAG-S`, e.ok("group", "list"))
	require.Eventually(t, func() bool {
		return regexpMatch(`(?m)^billing\s+paused\s+3\s`, e.ok("group", "list"))
	}, 15*time.Second, 100*time.Millisecond, "group list never showed a lag of 3")

	// Each queue's node; each node's health as the api's probes see it.
	require.Regexp(t, `(?m)^TOPIC\s+QUEUE\s+POSITION\s+STATE\s+NODE\s`, e.ok("topic", "get", "orders"))
	require.Regexp(t, `(?m)^orders\s+\d+\s+0\s+read_write\s+primary \(1\)\s`, e.ok("topic", "get", "orders"))
	require.Regexp(t, `(?m)^1\s+primary\s+read-write\s+(up|unknown)\s`, e.ok("node", "list"))
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }
