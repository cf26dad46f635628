package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

func naughtyStrings(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "naughty-strings", "blns.json"))
	require.NoError(t, err)
	var all []string
	require.NoError(t, json.Unmarshal(b, &all))
	return all
}

// TestNaughtyStrings uses hostile strings as topic names, tags, keys and header
// values: each gets a clean 4xx or is stored and delivered back byte-exact.
func TestNaughtyStrings(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	all := naughtyStrings(t)
	h.CreateTopic("naughty", 2)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "n", "endpoint_url": r.URL, "batch_size": 50,
		"subscriptions": []map[string]any{{"topic": "naughty"}}}))
	key := h.CreateAPIKey("naughty")

	for _, s := range all {
		code, body, _ := h.Do("POST", "/api/v1/topics", h.Token(), map[string]any{"name": s, "queues": 1})
		if code == 201 {
			var got struct{ Name string }
			require.NoError(t, json.Unmarshal(body, &got))
			require.Equal(t, s, got.Name)
			continue
		}
		require.True(t, code == 422 || code == 409, "topic %q: %d %s", s, code, body)
	}

	type want struct{ tag, key, header string }
	expect := map[string]want{}
	for i, s := range all {
		msg := map[string]any{"body": map[string]int{"i": i}, "tag": s, "key": s, "headers": map[string]string{"x-naughty": s}}
		code, body, _ := h.Do("POST", "/v1/topics/naughty/messages", key, map[string]any{"messages": []any{msg}})
		if code != 201 {
			require.True(t, code >= 400 && code < 500, "%q: %d %s", s, code, body)
			continue
		}
		for _, p := range published(t, body) {
			expect[p.ID] = want{s, s, s}
		}
	}
	require.Greater(t, len(expect), len(all)/2, "most naughty strings are valid tags")
	require.Eventually(t, func() bool { return countEnvelopes(t, r) >= len(expect) }, 30*time.Second, 20*time.Millisecond)
	seen := 0
	for _, d := range r.All() {
		var env struct {
			Messages []struct {
				ID      string            `json:"id"`
				Tag     string            `json:"tag"`
				Key     string            `json:"key"`
				Headers map[string]string `json:"headers"`
			} `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(d.Body, &env))
		for _, m := range env.Messages {
			w := expect[m.ID]
			require.Equal(t, w.tag, m.Tag, m.ID)
			require.Equal(t, w.key, m.Key, m.ID)
			require.Equal(t, w.header, m.Headers["x-naughty"], m.ID)
			seen++
		}
	}
	require.Equal(t, len(expect), seen)
}
