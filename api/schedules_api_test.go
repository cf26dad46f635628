package api_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// exerciseSchedules drives every schedule operation against the spec: create
// (and a taken name, a bad expression), list, get, patch (and a bad expression,
// a rename, a pause by patch, an unknown schedule), pause, resume, delete.
func exerciseSchedules(t *testing.T, sc *specClient, tok string) {
	t.Helper()
	type schedule struct {
		Name     string
		State    string
		NextRuns []string `json:"next_runs"`
		Body     any
	}
	req := map[string]any{"name": "nightly", "topic": "orders", "cron": "0 3 * * *", "timezone": "America/New_York",
		"body": map[string]int{"n": 1}, "headers": map[string]string{"x-job": "nightly"}}
	created := decode[schedule](t, sc.do("POST", "/api/v1/schedules", tok, req, 201))
	require.Equal(t, "active", created.State)
	require.Len(t, created.NextRuns, 5)
	sc.do("POST", "/api/v1/schedules", tok, req, 409)
	req["name"], req["cron"] = "broken", "0 25 * * *"
	sc.do("POST", "/api/v1/schedules", tok, req, 422)
	list := decode[struct{ Items []schedule }](t, sc.do("GET", "/api/v1/schedules", tok, nil, 200))
	require.Len(t, list.Items, 1)
	require.Equal(t, map[string]any{"n": float64(1)}, decode[schedule](t, sc.do("GET", "/api/v1/schedules/nightly", tok, nil, 200)).Body)
	patched := decode[schedule](t, sc.do("PATCH", "/api/v1/schedules/nightly", tok, map[string]any{"cron": "30 4 * * *", "body": map[string]int{"n": 2}}, 200))
	require.Equal(t, map[string]any{"n": float64(2)}, patched.Body)
	require.Contains(t, patched.NextRuns[0], ":30:00.000Z", "the next runs follow the new expression")
	sc.do("PATCH", "/api/v1/schedules/nightly", tok, map[string]any{"cron": "0 99 * * *"}, 422)
	sc.do("PATCH", "/api/v1/schedules/nightly", tok, map[string]any{"name": "other"}, 422)
	sc.do("PATCH", "/api/v1/schedules/nightly", tok, map[string]any{"paused": true}, 422)
	sc.do("PATCH", "/api/v1/schedules/nowhere", tok, map[string]any{"tag": "x"}, 404)
	sc.do("PATCH", "/api/v1/schedules/nightly", tok, json.RawMessage(`null`), 422)
	sc.do("PATCH", "/api/v1/schedules/nightly", tok, json.RawMessage(`[]`), 422)
	sc.do("POST", "/api/v1/schedules", tok, json.RawMessage(`[1]`), 422)
	type typed struct {
		ContentType string `json:"content_type"`
		BodyBase64  string `json:"body_base64"`
	}
	bin := decode[typed](t, sc.do("PATCH", "/api/v1/schedules/nightly", tok, map[string]any{"body_base64": "aGVsbG8="}, 200))
	require.Equal(t, "application/octet-stream", bin.ContentType, "a body changing form takes that form's default type")
	require.Equal(t, "aGVsbG8=", bin.BodyBase64)
	require.Equal(t, "application/json", decode[typed](t, sc.do("PATCH", "/api/v1/schedules/nightly", tok, map[string]any{"body": map[string]int{"n": 3}}, 200)).ContentType)
	require.Empty(t, decode[schedule](t, sc.do("POST", "/api/v1/schedules/nightly/pause", tok, nil, 200)).NextRuns)
	require.Equal(t, "active", decode[schedule](t, sc.do("POST", "/api/v1/schedules/nightly/resume", tok, nil, 200)).State)
	sc.do("DELETE", "/api/v1/schedules/nightly", tok, nil, 204)
	sc.do("GET", "/api/v1/schedules/nightly", tok, nil, 404)
}
