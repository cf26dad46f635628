package main

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/heraldtest"
)

// TestCLIMessagesAndGroupActions drives, through the built binary: publishing with
// an API key, browsing a topic, a message and a batch (bat_…) with their attempts,
// the attempt search, a group's cursors, resending one message and a range, a test
// delivery and a secret rotation, each checked through the API or the receiver;
// and the session flags anywhere on the line.
func TestCLIMessagesAndGroupActions(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	e.env = append(e.env, "HERALD_TOKEN="+h.Token())
	e.ok("topic", "create", "orders", "--queues", "1")
	recv := heraldtest.NewReceiver(t)
	var refusing atomic.Bool // set while a test delivery is to be refused
	recv.Respond = func(heraldtest.Delivery) int {
		if refusing.Load() {
			return 500
		}
		return 204
	}
	created := jsonOf[client.Group](t, e.ok("group", "create", "billing", "--endpoint", recv.URL, "--subscribe", "orders",
		"--consume-from", "earliest", "--json"))
	recv.SetSecret(created.SigningSecret)
	key := jsonOf[struct{ Key string }](t, e.ok("key", "create", "--name", "ci", "--topics", "orders,bulk", "--json")).Key

	// Publish: the key is required; the message is stored and delivered.
	require.Contains(t, e.exit(exitUsage, "message", "publish", "orders", "--data", "{}"), "--api-key")
	e.exit(exitUsage, "message", "publish", "orders", "--api-key", key)
	code, out, errOut := e.run("", []string{"HERALD_API_KEY=" + key}, "message", "publish", "orders", "--data", `{"n":1}`,
		"--key", "c-1", "--tag", "created", "--header", "x-region=eu", "--json")
	require.Equal(t, 0, code, errOut)
	pub := jsonOf[client.Published](t, out)
	require.True(t, strings.HasPrefix(pub.ID, "msg_"), pub.ID)
	recv.WaitCount(1, 15*time.Second)
	require.Len(t, recv.Get(pub.ID), 1)
	require.Equal(t, "eu", recv.Get(pub.ID)[0].Header.Get("x-region"))
	text := e.ok("message", "publish", "orders", "--api-key", key, "--data", "plain words")
	require.Regexp(t, `(?m)^msg_\d+_\d+\s+orders\s+`, text)
	require.Contains(t, e.exit(exitUnauthorized, "message", "publish", "nope", "--api-key", key, "--data", "{}"), "may not publish")

	// Browse and get.
	list := jsonOf[[]client.MessageSummary](t, e.ok("message", "list", "orders", "--key", "c-1", "--json"))
	require.Len(t, list, 1)
	require.Equal(t, pub.ID, list[0].ID)
	require.Equal(t, "created", list[0].Tag)
	require.Len(t, jsonOf[[]client.MessageSummary](t, e.ok("message", "list", "orders", "--json")), 2)
	_, _, errOut = e.run("", nil, "message", "list", "orders", "--limit", "1")
	require.Contains(t, errOut, "--cursor", "the next page's cursor")
	e.exit(exitUsage, "message", "list", "orders", "--limit", "0")
	var m client.MessageDetail
	require.Eventually(t, func() bool {
		m = jsonOf[client.MessageDetail](t, e.ok("message", "get", pub.ID, "--json"))
		return len(m.DeliveryAttempts) == 1
	}, 15*time.Second, 100*time.Millisecond, "the attempt was never recorded")
	require.Equal(t, "orders", m.Topic)
	require.JSONEq(t, `{"n":1}`, string(m.Body))
	require.Equal(t, "billing", m.DeliveryAttempts[0].Group)
	require.Regexp(t, `(?m)^billing\s+1\s+2\d\d\s`, e.ok("message", "get", pub.ID))
	e.exit(exitNotFound, "message", "get", "msg_999_999")

	// Attempts and cursors.
	attempts := jsonOf[[]client.GroupAttempt](t, e.ok("group", "attempts", "billing", "--status-class", "2xx", "--json"))
	require.NotEmpty(t, attempts)
	require.Empty(t, jsonOf[[]client.GroupAttempt](t, e.ok("group", "attempts", "billing", "--status-class", "5xx", "--json")))
	e.exit(exitInvalid, "group", "attempts", "billing", "--status-class", "6xx")
	var cursors []client.Cursor
	require.Eventually(t, func() bool {
		cursors = jsonOf[[]client.Cursor](t, e.ok("group", "offsets", "billing", "--json"))
		return len(cursors) == 1 && cursors[0].Lag == 0
	}, 15*time.Second, 100*time.Millisecond)
	require.Equal(t, pub.Queue, cursors[0].Queue)
	require.Regexp(t, `(?m)^orders\s+`+itoa(pub.Queue)+`\s+`, e.ok("group", "offsets", "billing"))

	// Resend one message, then a range of one: each arrives again under its id.
	r := jsonOf[client.ResendResult](t, e.ok("group", "resend", "billing", pub.ID, "--json"))
	require.Equal(t, 1, r.Queued)
	require.Eventually(t, func() bool { return len(recv.Get(pub.ID)) == 2 }, 15*time.Second, 10*time.Millisecond)
	e.exit(exitUsage, "group", "resend-range", "billing")
	out = e.ok("group", "resend-range", "billing", "--queue", itoa(pub.Queue), "--from-offset", itoa(pub.Offset),
		"--to-offset", itoa(pub.Offset))
	require.Regexp(t, `(?m)^billing\s+1\s+0$`, out)
	require.Eventually(t, func() bool { return len(recv.Get(pub.ID)) == 3 }, 15*time.Second, 10*time.Millisecond)

	// A test delivery reaches the endpoint; a refused one exits 1.
	tr := jsonOf[client.TestResult](t, e.ok("group", "test", "billing", "--body", `{"ping":true}`, "--json"))
	require.True(t, tr.OK, tr)
	require.Len(t, recv.Get(tr.WebhookID), 1)
	e.exit(exitUsage, "group", "test", "billing", "--body", "not json")
	refusing.Store(true)
	require.Contains(t, e.exit(exitError, "group", "test", "billing"), "did not accept")
	refusing.Store(false)

	// Rotating the secret: the API then shows the new one and when the old one stops.
	rot := jsonOf[client.Group](t, e.ok("group", "rotate-secret", "billing", "--overlap", "1h", "--json"))
	require.True(t, strings.HasPrefix(rot.SigningSecret, "whsec_"))
	require.NotEqual(t, created.SigningSecret, rot.SigningSecret)
	after := jsonOf[client.Group](t, e.ok("group", "get", "billing", "--show-secret", "--json"))
	require.Equal(t, rot.SigningSecret, after.SigningSecret)
	require.NotNil(t, after.PreviousSecretExpiresAt)
	e.exit(exitUsage, "group", "rotate-secret", "billing", "--overlap", "1500ms")

	// A batch POST (bat_…) is found by its id.
	e.ok("topic", "create", "bulk", "--queues", "1")
	batchRecv := heraldtest.NewReceiver(t)
	bg := jsonOf[client.Group](t, e.ok("group", "create", "batcher", "--endpoint", batchRecv.URL, "--subscribe", "bulk",
		"--consume-from", "earliest", "--batch-size", "2", "--batch-window-ms", "2000", "--json"))
	batchRecv.SetSecret(bg.SigningSecret)
	members := h.Publish(key, "bulk", map[string]any{"body": map[string]int{"n": 1}}, map[string]any{"body": map[string]int{"n": 2}})
	var batchID string
	require.Eventually(t, func() bool {
		for _, a := range jsonOf[[]client.GroupAttempt](t, e.ok("group", "attempts", "batcher", "--json")) {
			if client.IsBatchID(a.WebhookID) {
				batchID = a.WebhookID
			}
		}
		return batchID != ""
	}, 15*time.Second, 100*time.Millisecond, "no batch attempt recorded")
	b := jsonOf[client.BatchDetail](t, e.ok("message", "get", batchID, "--json"))
	require.Equal(t, "batcher", b.Group)
	require.Equal(t, []string{members[0].ID, members[1].ID}, b.Messages)
	require.Regexp(t, `(?m)^`+batchID+`\s+batcher\s+2$`, e.ok("message", "get", batchID))

	// Session flags anywhere on the line.
	other := newCLIEnv(t, "http://127.0.0.1:1")
	other.env = append(other.env, "HERALD_TOKEN="+h.Token())
	for _, args := range [][]string{
		{"--url", h.BaseURL, "--json", "group", "offsets", "billing"},
		{"group", "--url=" + h.BaseURL, "offsets", "--output", "json", "billing"},
		{"-json", "group", "offsets", "billing", "--url", h.BaseURL},
	} {
		code, out, errOut := other.run("", nil, args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		var cs []client.Cursor
		require.NoError(t, json.Unmarshal([]byte(out), &cs), "%v: %s", args, out)
		require.Len(t, cs, 1)
	}
	require.Contains(t, other.ok("--url", h.BaseURL, "topic", "--help"), "usage: herald topic")
	other.exit(exitUnavailable, "group", "offsets", "billing")
}

// TestCLIDelayedMessages drives, through the built binary: a publish with --delay
// (its dly_ id and due time), reading it while it waits, a cancel (twice: the
// second finds nothing), a message in its queue refused by cancel, a bad --delay,
// and a --deliver-at in the past, delivered at once.
func TestCLIDelayedMessages(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	e.env = append(e.env, "HERALD_TOKEN="+h.Token())
	e.ok("topic", "create", "reminders", "--queues", "1")
	recv := heraldtest.NewReceiver(t)
	recv.SetSecret(jsonOf[client.Group](t, e.ok("group", "create", "app", "--endpoint", recv.URL, "--subscribe", "reminders", "--json")).SigningSecret)
	key := jsonOf[struct{ Key string }](t, e.ok("key", "create", "--name", "ci", "--topics", "reminders", "--json")).Key

	before := time.Now()
	pub := jsonOf[client.Published](t, e.ok("message", "publish", "reminders", "--api-key", key, "--data", `{"user":7}`, "--delay", "1h", "--json"))
	require.Regexp(t, `^dly_\d+$`, pub.ID)
	at, err := time.Parse(time.RFC3339Nano, pub.DeliverAt)
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(time.Hour), at, 5*time.Second)
	m := jsonOf[client.MessageDetail](t, e.ok("message", "get", pub.ID, "--json"))
	require.Equal(t, "waiting", m.State)
	require.JSONEq(t, `{"user":7}`, string(m.Body))
	require.Contains(t, e.ok("message", "get", pub.ID), "waiting, due "+pub.DeliverAt)
	require.NotContains(t, e.ok("message", "get", pub.ID, "--json"), `"offset"`, "a waiting message has no offset yet")
	require.Contains(t, e.ok("message", "cancel", pub.ID), "cancelled "+pub.ID)
	e.exit(exitNotFound, "message", "cancel", pub.ID)
	e.exit(exitNotFound, "message", "get", pub.ID)
	e.exit(exitUsage, "message", "publish", "reminders", "--api-key", key, "--data", "{}", "--delay", "-5s")
	e.exit(exitUsage, "message", "publish", "reminders", "--api-key", key, "--data", "{}", "--deliver-at", "tomorrow")

	now := jsonOf[client.Published](t, e.ok("message", "publish", "reminders", "--api-key", key, "--data", `{"user":8}`,
		"--deliver-at", "2020-01-01T00:00:00Z", "--json"))
	require.Regexp(t, `^dly_\d+$`, now.ID)
	recv.WaitCount(1, 15*time.Second)
	var id string
	for got := range recv.All() {
		id = got
	}
	require.Regexp(t, `^msg_\d+_\d+$`, id, "delivered from its queue")
	require.JSONEq(t, `{"user":8}`, string(recv.Get(id)[0].Body))
	require.Contains(t, e.exit(exitInvalid, "message", "cancel", id), "dly_")
}
