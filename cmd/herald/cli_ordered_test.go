package main

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/heraldtest"
)

// TestCLIBlockedKeys drives a group ordered by key whose endpoint fails one key's
// first message (pause after 2 attempts) through the built binary: group stats
// shows the paused key, key-resume sends its head again, key-skip moves the key
// on to its next message, and a key no longer blocked is not found (exit 3).
// Also: group get shows no signing secret unless --show-secret asks for it.
func TestCLIBlockedKeys(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	e.env = append(e.env, "HERALD_TOKEN="+h.Token())
	h.CreateTopic("ord", 1)
	recv := heraldtest.NewReceiver(t)
	var headTries atomic.Int32
	recv.Respond = func(d heraldtest.Delivery) int {
		if d.Header.Get("herald-key") == "stuck" && string(d.Body) == `{"n":0}` {
			headTries.Add(1)
			return 500
		}
		return 204
	}
	created := jsonOf[client.Group](t, e.ok("group", "create", "g", "--output", "json", "--endpoint", recv.URL,
		"--subscribe", "ord", "--ordered", "--ordering", "key", "--max-attempts", "2", "--retry-schedule", "1",
		"--ordered-on-exhausted", "pause", "--consume-from", "earliest"))
	require.NotEmpty(t, created.SigningSecret)
	recv.SetSecret(created.SigningSecret)
	require.Empty(t, jsonOf[client.Group](t, e.ok("group", "get", "g", "--output", "json")).SigningSecret)
	require.Equal(t, created.SigningSecret, jsonOf[client.Group](t, e.ok("group", "get", "g", "--show-secret", "--output", "json")).SigningSecret)
	require.Contains(t, e.ok("group", "get", "g", "--show-secret"), created.SigningSecret)

	pub := h.Publish(h.CreateAPIKey("ord"), "ord",
		map[string]any{"key": "stuck", "body": map[string]int{"n": 0}},
		map[string]any{"key": "stuck", "body": map[string]int{"n": 1}},
		map[string]any{"key": "other", "body": map[string]int{"n": 0}})
	recv.WaitCount(1, 15*time.Second) // the other key is not held up by the stuck one

	stats := func() client.GroupStats {
		return jsonOf[client.GroupStats](t, e.ok("group", "stats", "g", "--output", "json"))
	}
	pausedAlone := func() bool {
		st := stats()
		return st.BlockedKeyCount == 1 && len(st.BlockedKeys) == 1 && st.BlockedKeys[0].Paused && st.BlockedKeys[0].Action == ""
	}
	require.Eventually(t, pausedAlone, 15*time.Second, 100*time.Millisecond, "the stuck key never showed paused")
	b := stats().BlockedKeys[0]
	require.Equal(t, "stuck", b.Key)
	require.Equal(t, pub[0].ID, b.MessageID)
	require.Equal(t, pub[0].Queue, b.Queue)
	require.Equal(t, 2, b.Attempts)
	require.Equal(t, int32(2), headTries.Load())
	require.Regexp(t, `(?m)^g\s+.*\s1$`, e.ok("group", "stats", "g"), "the table's BLOCKED-KEYS column")

	e.exit(exitUsage, "group", "key-resume", "g")
	e.exit(exitUsage, "group", "key-skip", "g", "--key", "stuck", "--queue", "-1")
	resumed := jsonOf[[]client.BlockedKey](t, e.ok("group", "key-resume", "g", "--key", "stuck", "--output", "json"))
	require.Len(t, resumed, 1)
	require.Equal(t, "stuck", resumed[0].Key)
	require.Equal(t, "resume", resumed[0].Action)
	require.Eventually(t, func() bool { return headTries.Load() == 4 }, 15*time.Second, 10*time.Millisecond, "resume did not send the head again")
	require.Eventually(t, pausedAlone, 15*time.Second, 100*time.Millisecond, "the key did not pause again")

	queue := strconv.FormatInt(pub[0].Queue, 10)
	require.Contains(t, e.ok("group", "key-skip", "g", "--key", "stuck", "--queue", queue), "stuck")
	require.Eventually(t, func() bool { return len(recv.Get(pub[1].ID)) == 1 }, 15*time.Second, 10*time.Millisecond,
		"skip did not move the key on")
	require.Eventually(t, func() bool { return stats().BlockedKeyCount == 0 }, 15*time.Second, 100*time.Millisecond)
	e.exit(exitNotFound, "group", "key-skip", "g", "--key", "stuck")
	require.Empty(t, recv.Get(pub[0].ID), "the skipped head was never acknowledged")
}

// TestCLIBlockedQueues drives a group ordered by queue whose endpoint fails one
// message (pause after 1 attempt) through the built binary: key-skip answers 404
// with a hint to the queue commands, queue-resume sends the head again, queue-skip
// moves the queue on (the head becomes a dead letter, shown by dead-letters get),
// and a queue no longer blocked is not found.
func TestCLIBlockedQueues(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	e.env = append(e.env, "HERALD_TOKEN="+h.Token())
	h.CreateTopic("ord", 1)
	recv := heraldtest.NewReceiver(t)
	var headTries atomic.Int32
	recv.Respond = func(d heraldtest.Delivery) int {
		if string(d.Body) == `{"n":0}` {
			headTries.Add(1)
			return 500
		}
		return 204
	}
	created := jsonOf[client.Group](t, e.ok("group", "create", "g", "--json", "--endpoint", recv.URL, "--subscribe", "ord",
		"--ordered", "--ordering", "queue", "--max-attempts", "1", "--ordered-on-exhausted", "pause", "--consume-from", "earliest"))
	recv.SetSecret(created.SigningSecret)
	pub := h.Publish(h.CreateAPIKey("ord"), "ord", map[string]any{"body": map[string]int{"n": 0}}, map[string]any{"body": map[string]int{"n": 1}})
	stats := func() client.GroupStats { return jsonOf[client.GroupStats](t, e.ok("group", "stats", "g", "--json")) }
	paused := func() bool {
		st := stats()
		return len(st.BlockedQueues) == 1 && st.BlockedQueues[0].Paused && st.BlockedQueues[0].Action == ""
	}
	require.Eventually(t, paused, 15*time.Second, 100*time.Millisecond, "the queue never showed paused")
	queue := strconv.FormatInt(pub[0].Queue, 10)

	hint := e.exit(exitNotFound, "group", "key-skip", "g", "--key", "any")
	require.Contains(t, hint, "ordered by queue")
	require.Contains(t, hint, "herald group queue-skip g --queue")
	e.exit(exitUsage, "group", "queue-skip", "g")
	resumed := jsonOf[client.BlockedQueue](t, e.ok("group", "queue-resume", "g", "--queue", queue, "--json"))
	require.Equal(t, "resume", resumed.Action)
	require.Eventually(t, func() bool { return headTries.Load() == 2 }, 15*time.Second, 10*time.Millisecond, "resume did not send the head again")
	require.Eventually(t, paused, 15*time.Second, 100*time.Millisecond, "the queue did not pause again")
	require.Regexp(t, `(?m)^`+queue+`\s+`+pub[0].ID+`\s+\d+\s+\d+\s+\S+\s+\S+\s+skip$`, e.ok("group", "queue-skip", "g", "--queue", queue))
	require.Eventually(t, func() bool { return len(recv.Get(pub[1].ID)) == 1 }, 15*time.Second, 10*time.Millisecond,
		"skip did not move the queue on")
	require.Eventually(t, func() bool { return len(stats().BlockedQueues) == 0 }, 15*time.Second, 100*time.Millisecond)
	require.Contains(t, e.exit(exitNotFound, "group", "queue-skip", "g", "--queue", queue), "lists what is blocked")

	// The skipped head is a dead letter, with its attempts.
	var dls []client.DeadLetter
	require.Eventually(t, func() bool {
		dls = jsonOf[[]client.DeadLetter](t, e.ok("dead-letters", "list", "g", "--json"))
		return len(dls) == 1
	}, 15*time.Second, 100*time.Millisecond)
	var d client.DeadLetterDetail
	require.Eventually(t, func() bool {
		d = jsonOf[client.DeadLetterDetail](t, e.ok("dead-letters", "get", "g", itoa(dls[0].ID), "--json"))
		return len(d.DeliveryAttempts) > 0
	}, 15*time.Second, 100*time.Millisecond, "no attempt shown with the dead letter")
	require.Equal(t, pub[0].ID, d.MessageID)
	require.Equal(t, 500, d.DeliveryAttempts[0].Status)
	require.Regexp(t, `(?m)^1\s+500\s`, e.ok("dead-letters", "get", "g", itoa(dls[0].ID)))
	e.exit(exitNotFound, "dead-letters", "get", "g", "99999")
	e.exit(exitUsage, "dead-letters", "get", "g", "x")
}
