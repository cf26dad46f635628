package e2e

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
)

// postStarts records every POST a batching receiver got — when it arrived and the
// message ids of its envelope — whatever it answered; safe for concurrent use.
type postStarts struct {
	mu    sync.Mutex
	posts []postStart
}

type postStart struct {
	at  time.Time
	ids []string
}

// wrap makes r record every POST and answer 204 after latency (a slow endpoint).
func (p *postStarts) wrap(t *testing.T, r *heraldtest.Receiver, latency time.Duration) {
	r.Respond = func(d heraldtest.Delivery) int {
		var env struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
		}
		ps := postStart{at: d.At}
		if json.Unmarshal(d.Body, &env) == nil {
			for _, m := range env.Messages {
				ps.ids = append(ps.ids, m.ID)
			}
		}
		p.mu.Lock()
		p.posts = append(p.posts, ps)
		p.mu.Unlock()
		time.Sleep(latency) // stands for the endpoint's latency
		return 204
	}
}

// after returns the POSTs that arrived after t.
func (p *postStarts) after(t time.Time) []postStart {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []postStart
	for _, ps := range p.posts {
		if ps.at.After(t) {
			out = append(out, ps)
		}
	}
	return out
}

// messages returns how many distinct message ids the POSTs after t named.
func (p *postStarts) messages(t time.Time) map[string]int {
	out := map[string]int{}
	for _, ps := range p.after(t) {
		for _, id := range ps.ids {
			out[id]++
		}
	}
	return out
}

func bodies(from, n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"body": from + i}
	}
	return out
}

// TestPauseFencesRunningJobs pauses a group while a worker runs its jobs of ten
// batches against a slow endpoint (400 ms, batch 10, max_in_flight 2): no POST
// starts after the pause has answered, whether of a job running, one queued or one
// the dispatcher cut before it heard of the pause. A POST already on the wire
// completes; the receiver counts arrivals only.
func TestPauseFencesRunningJobs(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	var posts postStarts
	posts.wrap(t, r, 400*time.Millisecond)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 10, "max_in_flight": 2,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	h.Publish(key, "t", bodies(0, 300)...)
	r.WaitCount(3, 15*time.Second) // three POSTs answered: jobs of ten batches are mid-way
	h.Admin("POST", "/groups/g/pause", nil, 200)
	answered := time.Now()
	time.Sleep(3 * time.Second) // proves the absence of late POSTs (unfenced, they came up to 2.4 s later)
	late := posts.after(answered)
	n := 0
	for _, ps := range late {
		n += len(ps.ids)
	}
	t.Logf("after the pause answered: %d POSTs started (%d messages)", len(late), n)
	require.Zero(t, len(late), "POSTs started after the pause answered")

	h.Admin("POST", "/groups/g/resume", nil, 200)
	r.WaitCount(30, 30*time.Second) // resumed: the rest goes out
}

// TestResetByTimestampMidFlightRedelivers resets a group by timestamp to an offset
// behind what was delivered while two batches are in flight (1,000 messages on one
// queue, batch 10, max_in_flight 2, 400 ms endpoint, reset when about 300 arrived):
// every message after the reset offset is sent again, whatever the late reports of
// the jobs cut before the reset say.
func TestResetByTimestampMidFlightRedelivers(t *testing.T) {
	t.Parallel()
	t.Run("in process", func(t *testing.T) { t.Parallel(); resetMidFlight(t, app.All) })
	t.Run("worker apart", func(t *testing.T) { t.Parallel(); resetMidFlight(t, app.Roles{API: true, Dispatcher: true}) })
}

func resetMidFlight(t *testing.T, roles app.Roles) {
	h := heraldtest.StartHeraldRoles(t, roles, nil)
	if !roles.Worker {
		h.Start(app.Roles{Worker: true}) // its reports go through Redis
	}
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	var posts postStarts
	posts.wrap(t, r, 400*time.Millisecond)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 10, "max_in_flight": 2,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	const total, resetTo = 1000, 100
	first := h.Publish(key, "t", bodies(0, resetTo)...)
	time.Sleep(5 * time.Millisecond) // the next messages get a later created_at (ms)
	var all []heraldtest.Published
	all = append(all, first...)
	for from := resetTo; from < total; from += 450 {
		all = append(all, h.Publish(key, "t", bodies(from, min(450, total-from))...)...)
	}
	q := all[0].Queue
	var createdAt int64
	require.NoError(t, h.Store.DB().QueryRow(fmt.Sprintf("SELECT created_at FROM %s WHERE id = ?", models.QueueTableName(q)), all[resetTo].Offset).Scan(&createdAt))
	ts := time.UnixMilli(createdAt).UTC().Format(time.RFC3339Nano)

	require.Eventually(t, func() bool { return len(posts.messages(time.Time{})) >= 300 }, 30*time.Second, 5*time.Millisecond)
	body := h.Admin("POST", "/groups/g/offsets/reset", map[string]any{"to": "timestamp", "timestamp": ts}, 200)
	resetAt := time.Now()
	require.Contains(t, string(body), fmt.Sprintf(`"offset":%d`, resetTo), "the reset lands on offset %d: %s", resetTo, body)

	want := map[string]bool{}
	for _, m := range all[resetTo:] {
		want[m.ID] = true
	}
	missing := func() int {
		got := posts.messages(resetAt)
		n := 0
		for id := range want {
			if got[id] == 0 {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(60 * time.Second)
	for missing() > 0 && time.Now().Before(deadline) {
		if len(posts.after(time.Now().Add(-3*time.Second))) == 0 && time.Since(resetAt) > 5*time.Second {
			break // nothing sent for 3 s: what is missing stays missing
		}
		time.Sleep(50 * time.Millisecond) // polls the receiver
	}
	var before int
	got := posts.messages(resetAt)
	for _, m := range all[resetTo:300] {
		if got[m.ID] > 0 {
			before++
		}
	}
	t.Logf("after the reset: %d of %d messages of the range sent again (%d of the %d first delivered before the reset)",
		len(want)-missing(), len(want), before, 300-resetTo)
	require.Zero(t, missing(), "messages after the reset offset never sent again")
}
