package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestDeliveryEndToEnd publishes real GitHub payloads from 8 concurrent publishers to
// a 4-queue topic; group A (batch size 1) must get every one byte for byte, group B
// (batch size 10, tag filter) exactly the tagged ones inside envelopes.
func TestDeliveryEndToEnd(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	fx := loadFixtures(t)
	h.CreateTopic("github.events", 4)
	recvA, recvB := heraldtest.NewReceiver(t), heraldtest.NewReceiver(t)
	recvA.SetSecret(h.CreateGroup(map[string]any{"name": "group-a", "endpoint_url": recvA.URL,
		"subscriptions": []map[string]any{{"topic": "github.events"}}, "batch_size": 1, "max_in_flight": 8}))
	wantTags := []string{"push", "issues", "pull_request"}
	recvB.SetSecret(h.CreateGroup(map[string]any{"name": "group-b", "endpoint_url": recvB.URL,
		"subscriptions": []map[string]any{{"topic": "github.events", "tags": wantTags}}, "batch_size": 10, "max_in_flight": 4}))
	key := h.CreateAPIKey("github.*")

	type sent struct {
		body []byte
		tag  string
	}
	var mu sync.Mutex
	byID := map[string]sent{}
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < len(fx); i += 8 {
				// Two messages per request: the fixture and the next one.
				pair := []fixture{fx[i], fx[(i+1)%len(fx)]}
				req := rawPublish([][]byte{pair[0].Body, pair[1].Body}, []string{pair[0].Event, pair[1].Event})
				code, out, _ := h.Do("POST", "/v1/topics/github.events/messages", key, req)
				if !assertCreated(t, code, out) {
					return
				}
				for j, m := range published(t, out) {
					mu.Lock()
					byID[m.ID] = sent{body: pair[j].Body, tag: pair[j].Event}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	require.Len(t, byID, 2*len(fx))

	start := time.Now()
	recvA.WaitCount(len(byID), 30*time.Second)
	t.Logf("group A got %d in %v", len(byID), time.Since(start))
	for id, s := range byID {
		ds := recvA.Get(id)
		require.NotEmpty(t, ds, id)
		for _, d := range ds {
			require.True(t, d.Verified, "signature of %s", id)
			require.True(t, bytes.Equal(s.body, d.Body), "body of %s differs", id)
			require.Equal(t, s.tag, d.Header.Get("herald-tag"))
			require.Equal(t, "github.events", d.Header.Get("herald-topic"))
			require.Equal(t, "application/json", d.Header.Get("content-type"))
		}
	}
	require.Zero(t, recvA.Unverified())

	var tagged int
	for _, s := range byID {
		if contains(wantTags, s.tag) {
			tagged++
		}
	}
	require.Eventually(t, func() bool { return countEnvelopes(t, recvB) >= tagged }, 30*time.Second, 10*time.Millisecond)
	t.Logf("group B got %d in %v", tagged, time.Since(start))
	got := map[string]bool{}
	for _, d := range recvB.All() {
		require.True(t, d.Verified)
		require.Regexp(t, `^bat_[a-z2-7]{26}$`, d.ID)
		var env struct {
			Messages []struct {
				ID   string          `json:"id"`
				Tag  string          `json:"tag"`
				Body json.RawMessage `json:"body"`
			} `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(d.Body, &env))
		require.LessOrEqual(t, len(env.Messages), 10)
		for _, m := range env.Messages {
			s, ok := byID[m.ID]
			require.True(t, ok, "unknown id %s", m.ID)
			require.Contains(t, wantTags, s.tag, "%s has tag %s, filtered out", m.ID, s.tag)
			require.True(t, bytes.Equal(s.body, m.Body), "envelope body of %s differs", m.ID)
			got[m.ID] = true
		}
	}
	require.Len(t, got, tagged, "exactly the tagged messages reach group B")
	// A batch resent after a failure keeps its webhook-id; check nothing else duplicated.
	time.Sleep(200 * time.Millisecond) // proves no extra webhook-id follows: nothing signals an absence
	require.Equal(t, len(byID), recvA.Count())
}

func assertCreated(t *testing.T, code int, body []byte) bool {
	if code != 201 {
		t.Errorf("publish: %d %s", code, body)
		return false
	}
	return true
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// countEnvelopes counts distinct message ids inside the receiver's envelopes.
func countEnvelopes(t *testing.T, r *heraldtest.Receiver) int {
	ids := map[string]bool{}
	for _, d := range r.All() {
		var env struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
		}
		if json.Unmarshal(d.Body, &env) != nil {
			continue
		}
		for _, m := range env.Messages {
			ids[m.ID] = true
		}
	}
	return len(ids)
}

var _ = fmt.Sprint
