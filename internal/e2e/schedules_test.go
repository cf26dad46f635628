package e2e

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// scheduleView is the part of a schedule's JSON the tests read.
type scheduleView struct {
	Name      string   `json:"name"`
	State     string   `json:"state"`
	NextRuns  []string `json:"next_runs"`
	LastRunAt *string  `json:"last_run_at"`
	Runs      int64    `json:"runs"`
}

// TestScheduleAcrossTwoProcesses: a schedule ticking every second, with two
// `herald all` processes competing for the maintenance lease, publishes one
// message per tick: after ten ticks and a pause, exactly ten messages were
// delivered, each once, for ten distinct ticks, each within 2 s after its tick,
// with the herald-schedule and herald-schedule-tick headers. Bad schedules are refused
// with 422 naming the field, a taken name with 409; resume, delete and the
// reads answer as documented.
func TestScheduleAcrossTwoProcesses(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("t", 2)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "t"}}}))
	env := []string{"HERALD_HTTP_ADDR=127.0.0.1:0", "HERALD_MAINTENANCE_LEASE_DURATION=2s", "HERALD_MAINTENANCE_RENEW_INTERVAL=300ms"}
	startRoleProcess(t, h, "all", env...)
	startRoleProcess(t, h, "all", env...)

	for _, tc := range []struct {
		change  map[string]any
		pointer string
	}{
		{map[string]any{"cron": "every day"}, "/cron"},
		{map[string]any{"cron": "0 0 30 2 *"}, "/cron"},
		{map[string]any{"cron": "TZ=UTC 0 9 * * *"}, "/cron"},
		{map[string]any{"timezone": "Mars/Olympus"}, "/timezone"},
		{map[string]any{"topic": "nope"}, "/topic"},
		{map[string]any{"name": "Bad Name"}, "/name"},
		{map[string]any{"body": nil}, "/body"},
		{map[string]any{"headers": map[string]string{"authorization": "x"}}, "/headers/authorization"},
		{map[string]any{"tag": " padded"}, "/tag"},
	} {
		req := map[string]any{"name": "bad", "topic": "t", "cron": "* * * * *", "body": map[string]any{"a": 1}}
		for k, v := range tc.change {
			req[k] = v
		}
		code, body, _ := h.Do("POST", "/api/v1/schedules", h.Token(), req)
		require.Equal(t, 422, code, "%v: %s", tc.change, body)
		require.Contains(t, string(body), `"pointer":"`+tc.pointer+`"`, string(body))
	}

	var sc scheduleView
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/schedules", map[string]any{"name": "beat", "topic": "t", "cron": "* * * * * *",
		"timezone": "Europe/Paris", "body": map[string]any{"beat": true}, "tag": "cron", "headers": map[string]string{"x-job": "beat"}}, 201), &sc))
	require.Equal(t, "active", sc.State)
	require.Len(t, sc.NextRuns, 5)
	for i := 1; i < len(sc.NextRuns); i++ {
		a, _ := time.Parse(time.RFC3339Nano, sc.NextRuns[i-1])
		b, _ := time.Parse(time.RFC3339Nano, sc.NextRuns[i])
		require.Equal(t, time.Second, b.Sub(a), "next runs %v", sc.NextRuns)
	}
	h.Admin("POST", "/schedules", map[string]any{"name": "beat", "topic": "t", "cron": "@hourly", "body": 1}, 409)

	deadline := time.Now().Add(30 * time.Second)
	for sc.Runs < 10 {
		require.True(t, time.Now().Before(deadline), "ten ticks within 30 s; %d so far", sc.Runs)
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, json.Unmarshal(h.Admin("GET", "/schedules/beat", nil, 200), &sc))
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/schedules/beat/pause", nil, 200), &sc))
	require.Equal(t, "paused", sc.State)
	require.Empty(t, sc.NextRuns)
	require.EqualValues(t, 10, sc.Runs, "paused right after the tenth tick")
	require.NotNil(t, sc.LastRunAt)

	r.WaitCount(10, 10*time.Second)
	time.Sleep(1500 * time.Millisecond) // absence: no tick is published while paused, none twice
	require.Equal(t, 10, r.Count(), "one message per tick, no more")
	require.Len(t, r.All(), 10, "ten distinct messages")
	var at []time.Time
	var late []time.Duration
	ticks := map[string]bool{}
	for id := range r.All() {
		d := r.Get(id)[0]
		require.JSONEq(t, `{"beat":true}`, string(d.Body))
		require.Equal(t, "beat", d.Header.Get("Herald-Schedule"))
		require.Equal(t, "beat", d.Header.Get("X-Job"))
		tick, err := time.Parse(time.RFC3339Nano, d.Header.Get("Herald-Schedule-Tick"))
		require.NoError(t, err)
		require.Zero(t, tick.Nanosecond(), "ticks fall on whole seconds")
		require.False(t, ticks[tick.String()], "tick %v published twice", tick)
		ticks[tick.String()] = true
		require.False(t, d.At.Before(tick), "not before its tick")
		late = append(late, d.At.Sub(tick).Round(time.Millisecond))
		at = append(at, d.At)
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	slices.Sort(late)
	t.Logf("arrival after each tick, sorted: %v", late)
	require.Less(t, late[len(late)-1], 2*time.Second, "each within 2 s of its tick")
	require.Greater(t, at[9].Sub(at[0]), 8*time.Second, "ten ticks a second apart")

	require.NoError(t, json.Unmarshal(h.Admin("POST", "/schedules/beat/resume", nil, 200), &sc))
	require.Equal(t, "active", sc.State)
	require.Len(t, sc.NextRuns, 5)
	var list struct{ Items []scheduleView }
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/schedules", nil, 200), &list))
	require.Len(t, list.Items, 1)
	h.Admin("DELETE", "/schedules/beat", nil, 204)
	h.Admin("GET", "/schedules/beat", nil, 404)
	h.Admin("DELETE", "/schedules/beat", nil, 404)
	n := r.Count()
	time.Sleep(1500 * time.Millisecond) // absence: a deleted schedule fires no more
	require.LessOrEqual(t, r.Count(), n+1, "at most the tick published before the delete")
}
