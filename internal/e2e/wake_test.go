package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
)

// slowPoll is an asynq idle poll far longer than any wait below: a job these tests
// see quickly was found through the dispatcher's wake-up, not through a poll.
const slowPoll = time.Minute

// TestWorkerWakeLoneMessages publishes lone messages to an idle Herald whose workers
// poll asynq once a minute and whose jobs go through asynq (not in process, not
// pushed): each
// must still arrive within a second or two, because the dispatcher's PUBLISH on
// Keys.JobsChannel ends the worker's idle sleep.
func TestWorkerWakeLoneMessages(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, func(c *config.Config) {
		c.Worker.TaskCheckInterval, c.InProcess = slowPoll, new(bool)
		c.Worker.PushJobs = false // through asynq, as the wake-up is for asynq's jobs
	})
	h.CreateTopic("wake", 2)
	recv := heraldtest.NewReceiver(t)
	recv.SetSecret(h.CreateGroup(map[string]any{"name": "wake", "endpoint_url": recv.URL,
		"subscriptions": []map[string]any{{"topic": "wake"}}, "batch_size": 1, "max_in_flight": 4}))
	key := h.CreateAPIKey("wake")
	for i := range 5 {
		time.Sleep(100 * time.Millisecond) // every processor is back in its idle sleep
		start := time.Now()
		msg := h.Publish(key, "wake", map[string]any{"body": i})[0]
		require.Eventually(t, func() bool { return len(recv.Get(msg.ID)) > 0 }, 5*time.Second, time.Millisecond,
			"lone message %d not delivered within 5 s with a %s poll", i, slowPoll)
		t.Logf("lone message %d: %s", i, time.Since(start))
	}
}

// TestWorkerWakeShutdown stops an idle worker that polls once a minute: the idle
// sleep ends with the server, so Stop returns in seconds, not after the poll.
func TestWorkerWakeShutdown(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, func(c *config.Config) { c.Worker.TaskCheckInterval = slowPoll })
	time.Sleep(300 * time.Millisecond) // the processor found the asynq queue empty and sleeps
	start := time.Now()
	h.Stop()
	require.Less(t, time.Since(start), 10*time.Second, "Stop waited for the idle poll")
}
