package e2e

import (
	"database/sql"
	"maps"
	"slices"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/metrics"
)

// groupSeries returns, for each per-group metric family this process exports, the
// set of group label values among names.
func groupSeries(t *testing.T, names map[string]bool) map[string]map[string]bool {
	t.Helper()
	fams, err := metrics.Registry.Gather()
	require.NoError(t, err)
	out := map[string]map[string]bool{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "group" && names[l.GetValue()] {
					if out[f.GetName()] == nil {
						out[f.GetName()] = map[string]bool{}
					}
					out[f.GetName()][l.GetValue()] = true
				}
			}
		}
	}
	return out
}

// TestMetricsFollowOwnership: a dispatcher exports lag, breaker, retry and
// dead-letter series for the groups it owns; when a second dispatcher (a separate
// process) joins and takes some groups over, the first deletes every series of the
// groups it gave away and keeps those of the groups it still owns.
func TestMetricsFollowOwnership(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, nil)
	h.CreateTopic("m", 1)
	names := map[string]bool{}
	for range 10 {
		n := heraldtest.RandomName("mg")
		names[n] = true
		h.CreateGroup(map[string]any{"name": n, "endpoint_url": "http://127.0.0.1:1/hook", "subscriptions": []map[string]any{{"topic": "m"}}})
	}
	perGroup := []string{"herald_group_lag_messages", "herald_group_lag_seconds", "herald_group_breaker_state", "herald_group_retry_messages", "herald_group_dead_letters"}
	require.Eventually(t, func() bool {
		s := groupSeries(t, names)
		for _, f := range perGroup {
			if len(s[f]) != len(names) {
				return false
			}
		}
		return true
	}, 15*time.Second, 20*time.Millisecond, "every per-group series of every group")

	db, err := sql.Open("mysql", h.DSN)
	require.NoError(t, err)
	defer db.Close()
	owners := func() map[string]string { // group name → owner of its cursor
		rows, err := db.Query("SELECT g.name, c.owner FROM cursors c JOIN consumer_groups g ON g.id = c.group_id")
		require.NoError(t, err)
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var g, o string
			require.NoError(t, rows.Scan(&g, &o))
			out[g] = o
		}
		return out
	}
	first := owners()
	var mine string
	for _, o := range first {
		mine = o
	}
	require.NotEmpty(t, mine)

	startRoleProcess(t, h, "dispatcher")
	var kept, moved []string
	require.Eventually(t, func() bool {
		kept, moved = nil, nil
		for g, o := range owners() {
			switch o {
			case mine:
				kept = append(kept, g)
			case "":
				return false // between release and claim
			default:
				moved = append(moved, g)
			}
		}
		if len(moved) == 0 || len(kept)+len(moved) != len(names) {
			return false
		}
		s := groupSeries(t, names)
		for _, f := range perGroup {
			if !slices.Equal(slices.Sorted(maps.Keys(s[f])), slices.Sorted(slices.Values(kept))) {
				return false
			}
		}
		return true
	}, 20*time.Second, 50*time.Millisecond, "series only for groups still owned (kept %v, moved %v)", kept, moved)
}
