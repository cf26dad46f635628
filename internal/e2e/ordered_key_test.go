package e2e

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// keyLog is a receiver's view of a group ordered by key: per key, the sequence
// numbers it accepted in the order it accepted them, and the most POSTs it had
// open at once carrying one key (which must stay 1).
type keyLog struct {
	mu         sync.Mutex
	acked      map[string][]int
	open       map[string]int
	maxPerKey  int
	split      int // POSTs in which a key's messages were not consecutive
	tries      map[string]int
	doneAt     map[string]time.Time // when each key's last message was accepted
	lastN      int
	maxInFight int
	inFlight   int
}

func newKeyLog(lastN int) *keyLog {
	return &keyLog{acked: map[string][]int{}, open: map[string]int{}, tries: map[string]int{}, doneAt: map[string]time.Time{}, lastN: lastN}
}

// postMessages returns the messages of a POST: its body, or each batch member's.
func postMessages(body []byte) []orderedMsg {
	var env struct {
		Messages []struct {
			Body orderedMsg `json:"body"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &env) == nil && env.Messages != nil {
		out := make([]orderedMsg, len(env.Messages))
		for i, m := range env.Messages {
			out[i] = m.Body
		}
		return out
	}
	var m orderedMsg
	_ = json.Unmarshal(body, &m)
	return []orderedMsg{m}
}

// respond wires the log into r: fail decides whether a POST fails, given its
// messages and how often each was tried before; slow is the most a POST waits.
func (o *keyLog) respond(r *heraldtest.Receiver, slow time.Duration, fail func(ms []orderedMsg, tried []int) bool) {
	r.Respond = func(d heraldtest.Delivery) int {
		ms := postMessages(d.Body)
		keys := map[string]bool{}
		o.mu.Lock()
		prev := ""
		for _, m := range ms {
			if keys[m.K] && prev != m.K {
				o.split++
			}
			keys[m.K], prev = true, m.K
		}
		for k := range keys {
			o.open[k]++
			o.maxPerKey = max(o.maxPerKey, o.open[k])
		}
		o.inFlight++
		o.maxInFight = max(o.maxInFight, o.inFlight)
		tried := make([]int, len(ms))
		for i, m := range ms {
			id := m.K + "/" + strconv.Itoa(m.N)
			tried[i] = o.tries[id]
			o.tries[id]++
		}
		o.mu.Unlock()
		failed := fail(ms, tried)
		if slow > 0 {
			time.Sleep(time.Duration(rand.Int64N(int64(slow)))) // latency: a receiver of random speed
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		o.inFlight--
		for k := range keys {
			o.open[k]--
		}
		if failed {
			return 500
		}
		for _, m := range ms {
			o.acked[m.K] = append(o.acked[m.K], m.N)
			if m.N == o.lastN {
				o.doneAt[m.K] = time.Now()
			}
		}
		return 204
	}
}

func (o *keyLog) ackedOf(k string) []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]int(nil), o.acked[k]...)
}

// complete reports whether every key accepted n messages or more.
func (o *keyLog) complete(keys []string, n int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, k := range keys {
		if len(o.acked[k]) < n {
			return false
		}
	}
	return true
}

// requireKeysInOrder requires every key's accepted sequence to be exactly 0..n-1.
func requireKeysInOrder(t *testing.T, o *keyLog, keys []string, n int) {
	t.Helper()
	for _, k := range keys {
		require.Equal(t, seq(n), o.ackedOf(k), "key %s acknowledged out of order or twice", k)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	require.Equal(t, 1, o.maxPerKey, "a key had two POSTs open at once")
	require.Zero(t, o.split, "a POST carried a key's messages apart")
}

// publishRounds publishes n messages of every key: round i is one request holding
// message i of each key, so a key's messages are in publish order.
func publishRounds(t *testing.T, h *heraldtest.Herald, apiKey, topic string, keys []string, n int) {
	t.Helper()
	for i := range n {
		msgs := make([]map[string]any, len(keys))
		for j, k := range keys {
			msgs[j] = map[string]any{"key": k, "body": orderedMsg{K: k, N: i}}
		}
		h.Publish(apiKey, topic, msgs...)
	}
}

// TestOrderedByKeyFlaky publishes 100 messages for each of 40 keys on 4 queues to a
// group ordered by key whose endpoint fails 15 % of POSTs, retried after 1 s: all
// 4,000 are acknowledged well within a minute (ordered by queue, 2,587 in two
// minutes), every key exactly in order, never two POSTs of one key open at once,
// and keys of one queue in parallel.
func TestOrderedByKeyFlaky(t *testing.T) {
	t.Parallel()
	orderedByKeyFlaky(t, 1)
}

// TestOrderedByKeyBatches is TestOrderedByKeyFlaky with batch_size 5: a POST may
// carry several keys, each key's messages consecutive and in order.
func TestOrderedByKeyBatches(t *testing.T) {
	t.Parallel()
	orderedByKeyFlaky(t, 5)
}

func orderedByKeyFlaky(t *testing.T, batch int) {
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("ord", 4)
	r := heraldtest.NewReceiver(t)
	keys, n := keyNames(40), 100
	o := newKeyLog(n - 1)
	o.respond(r, 5*time.Millisecond, func([]orderedMsg, []int) bool { return rand.IntN(100) < 15 })
	r.SetSecret(h.CreateGroup(orderedGroup("g", r.URL, "ord", map[string]any{"ordering": "key", "batch_size": batch})))
	apiKey := h.CreateAPIKey("ord")
	start := time.Now()
	publishRounds(t, h, apiKey, "ord", keys, n)
	require.Eventually(t, func() bool { return o.complete(keys, n) }, 60*time.Second, 20*time.Millisecond, "not every message was acknowledged within a minute")
	took := time.Since(start)
	t.Logf("batch size %d: %d messages of %d keys in %v; at most %d POSTs open", batch, n*len(keys), len(keys), took, o.maxInFight)
	require.Less(t, took, 45*time.Second, "4,000 messages took most of a minute")
	requireKeysInOrder(t, o, keys, n)
	require.Greater(t, o.maxInFight, 4, "keys did not flow in parallel beyond one per queue")
}
