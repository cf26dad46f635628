package e2e

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestResetByTimestampReplaysInFlight resets a group by timestamp while its batches
// are in flight (one queue, batch 10, max_in_flight 2, 400 ms endpoint; 1,000
// messages published while it was paused, as 10 requests of 100 made 150 ms apart)
// to the time taken just before the second request, once the receiver has seen the
// 300th message. Every message after the reset offset that reached the receiver
// before the reset was made (answered, or its POST still open) is sent again, and
// every message is delivered at least once: none in flight at the reset is skipped.
func TestResetByTimestampReplaysInFlight(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("t", 1)
	r := heraldtest.NewReceiver(t)
	var posts postStarts
	posts.wrap(t, r, 400*time.Millisecond)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "batch_size": 10, "max_in_flight": 2,
		"subscriptions": []map[string]any{{"topic": "t"}}}))
	key := h.CreateAPIKey("t")
	h.Admin("POST", "/groups/g/pause", nil, 200)

	const requests, per = 10, 100
	var all []heraldtest.Published
	starts := make([]time.Time, requests) // taken just before each publish request
	for i := range requests {
		if i > 0 {
			time.Sleep(150 * time.Millisecond) // stands for the time between a publisher's requests
		}
		starts[i] = time.Now()
		all = append(all, h.Publish(key, "t", bodies(i*per, per)...)...)
	}
	offsetOf := make(map[string]int64, len(all))
	for _, m := range all {
		offsetOf[m.ID] = m.Offset
	}
	resetTo := all[per].Offset - 1 // the reset lands just before the second request's messages
	h.Admin("POST", "/groups/g/resume", nil, 200)

	seenUpTo := func(until time.Time) map[int64]bool {
		out := map[int64]bool{}
		for _, ps := range posts.until(until) {
			for _, id := range ps.ids {
				out[offsetOf[id]] = true
			}
		}
		return out
	}
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(posts.after(time.Time{}), func(ps postStart) bool {
			return slices.ContainsFunc(ps.ids, func(id string) bool { return offsetOf[id] >= all[299].Offset })
		})
	}, 30*time.Second, 5*time.Millisecond, "the receiver never saw the 300th message")

	sent := time.Now()
	body := h.Admin("POST", "/groups/g/offsets/reset", map[string]any{"to": "timestamp",
		"timestamp": starts[1].UTC().Format(time.RFC3339Nano)}, 200)
	answered := time.Now()
	var reset struct {
		Items []struct {
			Offset int64 `json:"offset"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(body, &reset), string(body))
	require.Len(t, reset.Items, 1, string(body))
	require.Equal(t, resetTo, reset.Items[0].Offset, "the reset lands before the second request's messages: %s", body)

	// What reached the receiver before the reset was made (answered or its POST still
	// open) above the reset offset must go out again. The old version POSTs a message
	// once, so any later arrival of one of these is the new version's; arrivals while
	// the reset was being answered may already be of the new version, so they count
	// as sent again. Messages first sent after the reset was made (those of jobs cut
	// and not yet POSTed, among others) are checked by the second condition.
	var replay []int64
	for off := range seenUpTo(sent) {
		if off > resetTo {
			replay = append(replay, off)
		}
	}
	slices.Sort(replay)
	require.NotEmpty(t, replay, "nothing beyond the reset offset was delivered before the reset; the test proves nothing")
	require.Greater(t, replay[len(replay)-1], all[299].Offset-1, "the receiver had not seen the 300th message")

	missing := func() (again, ever []int64) {
		later := map[int64]bool{}
		for _, ps := range posts.after(sent) {
			for _, id := range ps.ids {
				later[offsetOf[id]] = true
			}
		}
		for _, off := range replay {
			if !later[off] {
				again = append(again, off)
			}
		}
		seen := seenUpTo(time.Now())
		for _, m := range all {
			if !seen[m.Offset] {
				ever = append(ever, m.Offset)
			}
		}
		return again, ever
	}
	deadline := answered.Add(30 * time.Second) // the 900 messages sent again take about 18 s
	for {
		again, ever := missing()
		if len(again)+len(ever) == 0 || time.Now().After(deadline) {
			break
		}
		if time.Since(answered) > 5*time.Second && len(posts.after(time.Now().Add(-3*time.Second))) == 0 {
			break // nothing sent for 3 s: what is missing stays missing
		}
		time.Sleep(50 * time.Millisecond) // polls the receiver
	}
	again, ever := missing()
	t.Logf("reset to offset %d with offsets %d..%d delivered or on the wire: %d of %d sent again; %d of %d messages never delivered",
		resetTo, replay[0], replay[len(replay)-1], len(replay)-len(again), len(replay), len(ever), len(all))
	require.Empty(t, offsetRanges(again), "offsets after the reset offset delivered before the reset and never sent again")
	require.Empty(t, offsetRanges(ever), "offsets never delivered")
}

// until returns the POSTs that arrived before t.
func (p *postStarts) until(t time.Time) []postStart {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []postStart
	for _, ps := range p.posts {
		if ps.at.Before(t) {
			out = append(out, ps)
		}
	}
	return out
}

// offsetRanges returns sorted offsets as [from, to] pairs (nil for none), so a
// failure names ranges rather than hundreds of offsets.
func offsetRanges(offs []int64) [][2]int64 {
	var out [][2]int64
	for _, o := range offs {
		if n := len(out); n > 0 && out[n-1][1]+1 == o {
			out[n-1][1] = o
			continue
		}
		out = append(out, [2]int64{o, o})
	}
	return out
}
