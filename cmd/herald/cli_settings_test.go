package main

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/heraldtest"
)

// writableGroupKeys are the JSON names of every writable group setting the API has.
func writableGroupKeys(t *testing.T) []string {
	b, err := json.Marshal(control.GroupSettings{})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// TestCLIGroupSettingsRoundTrip sets every writable group setting the API has
// with flags of the built binary, through create and three patches, and reads
// each back with `group get --output json`, which shows exactly what the API's
// GET shows. Every setting ends up off its default at least once, so a setting
// without a flag fails the test. The masked header and password sent back keep
// their values: a delivery carries them.
func TestCLIGroupSettingsRoundTrip(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	e.env = append(e.env, "HERALD_TOKEN="+h.Token())
	h.CreateTopic("orders", 2)
	h.CreateTopic("refunds", 1)
	recv := heraldtest.NewReceiver(t)

	get := func(name string) map[string]any {
		out := e.ok("group", "get", name, "--output", "json")
		require.JSONEq(t, string(h.Admin("GET", "/groups/"+name, nil, 200)), out, "the CLI shows the API's group, every field")
		return jsonOf[map[string]any](t, out)
	}
	e.ok("group", "create", "plain", "--endpoint", heraldtest.NewReceiver(t).URL, "--subscribe", "orders")
	defaults := get("plain")
	changed := map[string]bool{}
	check := func(g map[string]any, want string) {
		t.Helper()
		w := jsonOf[map[string]any](t, want)
		for k, v := range w {
			require.Equal(t, v, g[k], k)
		}
		for _, k := range writableGroupKeys(t) {
			if _, ok := g[k]; !ok {
				t.Fatalf("group get shows no %s", k)
			}
			if !jsonEqual(t, g[k], defaults[k]) {
				changed[k] = true
			}
		}
	}

	created := jsonOf[map[string]any](t, e.ok("group", "create", "billing", "--output", "json",
		"--endpoint", recv.URL, "--subscribe", "orders:created,paid", "--subscribe", "refunds", "--filter", `refunds=attributes.x-region = "eu"`,
		"--batch-size", "20", "--batch-max-bytes", "2048", "--batch-window-ms", "250", "--max-in-flight", "3",
		"--rate-limit", "40", "--timeout-ms", "2500", "--max-attempts", "4", "--retry-schedule", "7,70",
		"--ordered", "--ordering", "queue", "--ordered-on-exhausted", "pause", "--consume-from", "earliest",
		"--dead-letter-retention-hours", "48", "--max-throttles", "7", "--header", "X-Api-Key=k1", "--header", "x-tenant=t1",
		"--basic-auth", "ops:s3cret"))
	recv.SetSecret(created["signing_secret"].(string))
	check(get("billing"), `{"endpoint_url":"`+recv.URL+`",
		"subscriptions":[{"topic":"orders","tags":["created","paid"],"filter":""},{"topic":"refunds","tags":[],"filter":"attributes.x-region = \"eu\""}],
		"batch_size":20,"batch_max_bytes":2048,"batch_window_ms":250,"max_in_flight":3,"rate_limit":40,
		"timeout_ms":2500,"max_attempts":4,"retry_schedule":[7,70],"ordered":true,"ordering":"queue","ordered_on_exhausted":"pause",
		"consume_from":"earliest","dead_letter_retention_hours":48,"max_throttles":7,"push_auth":null,
		"endpoint_headers":{"x-api-key":"********","x-tenant":"********"},"basic_auth":{"username":"ops","password":"********"}}`)

	// Sending the masked values back keeps them; --remove-header drops one.
	e.ok("group", "patch", "billing", "--header", "x-api-key=********", "--remove-header", "x-tenant",
		"--basic-auth", "ops:********", "--rate-limit", "41")
	check(get("billing"), `{"rate_limit":41,"endpoint_headers":{"x-api-key":"********"},
		"basic_auth":{"username":"ops","password":"********"},"batch_size":20}`)
	h.Publish(h.CreateAPIKey("orders"), "orders", map[string]any{"body": map[string]int{"n": 1}, "tag": "created"})
	recv.WaitCount(1, 15*time.Second)
	for _, d := range recv.All() {
		require.Equal(t, "k1", d.Header.Get("X-Api-Key"))
		require.Empty(t, d.Header.Get("X-Tenant"))
		require.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte("ops:s3cret")), d.Header.Get("Authorization"))
	}

	e.ok("group", "patch", "billing", "--basic-auth", "", "--push-audience", "https://aud.example", "--ordered=false", "--retry-schedule", "")
	check(get("billing"), `{"basic_auth":null,"push_auth":{"audience":"https://aud.example"},"ordered":false,"ordering":"",
		"retry_schedule":`+mustJSON(t, defaults["retry_schedule"])+`}`)
	e.ok("group", "patch", "billing", "--push-auth=false")
	check(get("billing"), `{"push_auth":null,"endpoint_headers":{"x-api-key":"********"}}`)
	e.ok("group", "patch", "billing", "--push-auth")
	check(get("billing"), `{"push_auth":{"audience":""}}`)

	for _, k := range writableGroupKeys(t) {
		require.True(t, changed[k], "no flag changed %s", k)
	}
	require.Contains(t, e.exit(exitUsage, "group", "patch", "billing", "--push-auth=false", "--push-audience", "x"), "push-audience")
	e.exit(exitUsage, "group", "patch", "billing", "--header", "x-a=1", "--remove-header", "x-a")
	e.exit(exitUsage, "group", "patch", "billing", "--basic-auth", "no-colon")
	e.exit(exitUsage, "group", "create", "more", "--endpoint", recv.URL, "--remove-header", "x-a")
	require.Contains(t, e.exit(exitUsage, "group", "patch", "billing", "--subscribe", "orders", "--filter", "refunds=attributes:x-a"),
		"no --subscribe refunds")
	e.exit(exitUsage, "group", "patch", "billing", "--filter", "orders=attributes:x-a")
	e.exit(exitUsage, "group", "patch", "billing", "--subscribe", "orders", "--filter", "orders=attributes:x-a", "--filter", "orders=attributes:x-b")
	e.exit(exitInvalid, "group", "patch", "billing", "--subscribe", "orders", "--filter", "orders=attributes.x-a ~ 1")
}

func jsonEqual(t *testing.T, a, b any) bool {
	return mustJSON(t, a) == mustJSON(t, b)
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestCLIDeletesAndRetention: topic create takes retention flags; topic delete
// --force unsubscribes the groups it names; group delete keeps the dead letters
// until purge_after unless --purge deletes them with it.
func TestCLIDeletesAndRetention(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	e.env = append(e.env, "HERALD_TOKEN="+h.Token())
	recv := heraldtest.NewReceiver(t)

	topic := jsonOf[struct {
		RetentionHours  int    `json:"retention_hours"`
		RetentionPolicy string `json:"retention_policy"`
	}](t, e.ok("topic", "create", "audit", "--queues", "1", "--retention-hours", "720", "--retention-policy", "strict", "--output", "json"))
	require.Equal(t, 720, topic.RetentionHours)
	require.Equal(t, "strict", topic.RetentionPolicy)
	require.Regexp(t, `(?m)^audit\s+1\s+-\s+0\s+720\s+strict`, e.ok("topic", "list"))
	e.ok("topic", "patch", "audit", "--retention-hours", "24", "--retention-policy", "consumed")
	require.Contains(t, e.ok("topic", "get", "audit", "--output", "json"), `"retention_hours": 24`)
	e.exit(exitInvalid, "topic", "create", "other", "--retention-policy", "sometimes")
	e.exit(exitUsage, "topic", "create", "other", "--queues", "0")
	e.exit(exitUsage, "topic", "patch", "audit")

	e.ok("group", "create", "a", "--endpoint", recv.URL, "--subscribe", "audit")
	e.ok("group", "create", "b", "--endpoint", recv.URL, "--subscribe", "audit")
	e.exit(exitConflict, "topic", "delete", "audit")
	del := jsonOf[struct {
		Name               string   `json:"name"`
		UnsubscribedGroups []string `json:"unsubscribed_groups"`
	}](t, e.ok("topic", "delete", "audit", "--force", "--output", "json"))
	require.ElementsMatch(t, []string{"a", "b"}, del.UnsubscribedGroups)
	e.exit(exitNotFound, "topic", "get", "audit")
	require.Empty(t, jsonOf[struct{ Subscriptions []any }](t, e.ok("group", "get", "a", "--output", "json")).Subscriptions)

	type deletion struct {
		Group      string `json:"group"`
		Purged     bool   `json:"purged"`
		PurgeAfter string `json:"purge_after"`
		DLQTopic   string `json:"dead_letter_topic"`
	}
	kept := jsonOf[deletion](t, e.ok("group", "delete", "a", "--output", "json"))
	require.False(t, kept.Purged)
	after, err := time.Parse(time.RFC3339Nano, kept.PurgeAfter)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(control.DefaultDeletedGroupGrace), after, time.Minute)
	require.Contains(t, e.ok("group", "delete", "b", "--purge"), "group b deleted; its dead letters and attempt log with it")
	e.exit(exitNotFound, "group", "delete", "b")
	require.NotContains(t, e.ok("group", "delete", "--help"), "dead letters are deleted")
}

// TestCLIFieldErrorsOnce: a 422 with several field errors prints each once.
func TestCLIFieldErrorsOnce(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	e.env = append(e.env, "HERALD_TOKEN="+h.Token())
	h.CreateTopic("orders", 1)
	errOut := e.exit(exitInvalid, "group", "create", "bad", "--endpoint", "ftp://x", "--subscribe", "orders",
		"--batch-size", "5000", "--max-attempts", "500")
	for _, p := range []string{"/endpoint_url: ", "/batch_size: ", "/max_attempts: "} {
		require.Equal(t, 1, strings.Count(errOut, p), "%s in %s", p, errOut)
	}
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %s", errOut)
}
