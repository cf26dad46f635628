package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/heraldtest"
)

// TestCLISchedules drives, through the built binary: a schedule created with a
// header, key and tag, delivered on its ticks with them; its table and JSON views
// with next run times; pause (no next runs), resume, patch (what is not given
// is kept), delete (twice: the second finds nothing); a taken name, a bad
// expression or zone and missing flags refused.
func TestCLISchedules(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	e.env = append(e.env, "HERALD_TOKEN="+h.Token())
	e.ok("topic", "create", "ops", "--queues", "1")
	recv := heraldtest.NewReceiver(t)
	recv.SetSecret(jsonOf[client.Group](t, e.ok("group", "create", "app", "--endpoint", recv.URL, "--subscribe", "ops", "--json")).SigningSecret)

	sc := jsonOf[client.Schedule](t, e.ok("schedule", "create", "beat", "--topic", "ops", "--cron", "@every 1s", "--timezone", "Asia/Tokyo",
		"--data", `{"beat":1}`, "--key", "k1", "--tag", "cron", "--header", "x-job=beat", "--json"))
	require.Equal(t, "active", sc.State)
	require.Equal(t, "Asia/Tokyo", sc.Timezone)
	require.Len(t, sc.NextRuns, 5)
	recv.WaitCount(2, 15*time.Second)
	for id := range recv.All() {
		d := recv.Get(id)[0]
		require.JSONEq(t, `{"beat":1}`, string(d.Body))
		require.Equal(t, "beat", d.Header.Get("x-job"))
	}
	require.Contains(t, e.ok("schedule", "list"), "beat")
	require.Contains(t, e.ok("schedule", "get", "beat"), "next runs: ")
	paused := jsonOf[client.Schedule](t, e.ok("schedule", "pause", "beat", "--json"))
	require.Equal(t, "paused", paused.State)
	require.Empty(t, paused.NextRuns)
	require.GreaterOrEqual(t, paused.Runs, int64(2))
	require.Equal(t, "active", jsonOf[client.Schedule](t, e.ok("schedule", "resume", "beat", "--json")).State)
	up := jsonOf[client.Schedule](t, e.ok("schedule", "patch", "beat", "--cron", "@every 2s", "--tag", "cron2", "--json"))
	require.Equal(t, "@every 2s", up.Cron)
	require.Equal(t, "cron2", up.Tag)
	require.JSONEq(t, `{"beat":1}`, string(up.Body), "the body not given is kept")
	require.Equal(t, map[string]string{"x-job": "beat"}, up.Headers, "the headers not given are kept")
	require.Equal(t, "k1", up.Key)
	up = jsonOf[client.Schedule](t, e.ok("schedule", "patch", "beat", "--data", "plain words", "--json"))
	require.Equal(t, "text/plain; charset=utf-8", up.ContentType)
	require.Equal(t, "@every 2s", up.Cron)
	e.exit(exitUsage, "schedule", "patch", "beat")
	require.Contains(t, e.exit(exitInvalid, "schedule", "patch", "beat", "--timezone", "Nowhere/Else"), "/timezone")
	e.exit(exitConflict, "schedule", "create", "beat", "--topic", "ops", "--cron", "@hourly", "--data", "{}")
	require.Contains(t, e.exit(exitInvalid, "schedule", "create", "bad", "--topic", "ops", "--cron", "61 * * * *", "--data", "{}"), "/cron")
	e.exit(exitUsage, "schedule", "create", "bad", "--topic", "ops", "--data", "{}")
	require.Contains(t, e.ok("schedule", "delete", "beat"), "deleted schedule beat")
	e.exit(exitNotFound, "schedule", "delete", "beat")
	e.exit(exitNotFound, "schedule", "get", "beat")
}
