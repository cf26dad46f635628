package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// orderedMsg is the body the ordered tests publish: key and sequence number.
type orderedMsg struct {
	K string `json:"k"`
	N int    `json:"n"`
}

// orderLog records, per key, the sequence numbers an endpoint accepted in the order
// it accepted them, and the most POSTs it had open at once per queue.
type orderLog struct {
	mu          sync.Mutex
	acked       map[string][]int
	open        map[string]int
	maxPerQueue int
	openKey     map[string]int
	maxPerKey   int
	tries       map[string][]string // webhook-id → herald-attempt of every POST
	firstAckAt  map[string]time.Time
}

func newOrderLog() *orderLog {
	return &orderLog{acked: map[string][]int{}, open: map[string]int{}, openKey: map[string]int{}, tries: map[string][]string{}, firstAckAt: map[string]time.Time{}}
}

// batchOneQueue returns the queue of a batch-size-1 webhook-id msg_<queue>_<offset>.
func batchOneQueue(id string) string {
	parts := strings.Split(id, "_")
	if len(parts) != 3 {
		return id
	}
	return parts[1]
}

// respond wires the log into r: decide returns the status for a POST (after a
// pause of up to slow), given its message and how many times it was tried before.
func (o *orderLog) respond(r *heraldtest.Receiver, slow time.Duration, decide func(m orderedMsg, tried int) int) {
	r.Respond = func(d heraldtest.Delivery) int {
		var m orderedMsg
		_ = json.Unmarshal(d.Body, &m)
		q := batchOneQueue(d.ID)
		o.mu.Lock()
		o.open[q]++
		o.maxPerQueue = max(o.maxPerQueue, o.open[q])
		o.openKey[m.K]++
		o.maxPerKey = max(o.maxPerKey, o.openKey[m.K])
		tried := len(o.tries[d.ID])
		o.tries[d.ID] = append(o.tries[d.ID], d.Header.Get("herald-attempt"))
		o.mu.Unlock()
		if slow > 0 {
			time.Sleep(time.Duration(rand.Int64N(int64(slow)))) // latency: a receiver of random speed
		}
		status := decide(m, tried)
		o.mu.Lock()
		o.open[q]--
		o.openKey[m.K]--
		if status < 300 {
			o.acked[m.K] = append(o.acked[m.K], m.N)
			if _, ok := o.firstAckAt[d.ID]; !ok {
				o.firstAckAt[d.ID] = time.Now()
			}
		}
		o.mu.Unlock()
		return status
	}
}

func (o *orderLog) ackedOf(k string) []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]int(nil), o.acked[k]...)
}

func (o *orderLog) triesOf(id string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.tries[id]...)
}

// seq returns 0..n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// requireInOrder requires every key's accepted sequence to be 0..n-1. With
// dupsAllowed (a crash), repeats of accepted numbers may appear (redelivery from the
// commit), but no number is ever accepted before every lower one was.
func requireInOrder(t *testing.T, o *orderLog, keys []string, n int, dupsAllowed bool) {
	t.Helper()
	for _, k := range keys {
		got := o.ackedOf(k)
		if !dupsAllowed {
			require.Equal(t, seq(n), got, "key %s acknowledged out of order", k)
			continue
		}
		high := -1
		for i, v := range got {
			if v > high+1 {
				require.Failf(t, "out of order", "key %s: %d acknowledged before %d (at %d of %v)", k, v, high+1, i, got)
			}
			high = max(high, v)
		}
		require.Equal(t, n-1, high, "key %s: not every message acknowledged: %v", k, got)
	}
}

// publishSeq publishes messages from..to-1 of every key, one request each, and
// returns each key's queue, requiring it never to change.
func publishSeq(t *testing.T, h *heraldtest.Herald, apiKey, topic string, keys []string, from, to int) map[string]int64 {
	t.Helper()
	queues := map[string]int64{}
	for i := from; i < to; i++ {
		for _, k := range keys {
			p := h.Publish(apiKey, topic, map[string]any{"key": k, "body": orderedMsg{K: k, N: i}})[0]
			if q, ok := queues[k]; ok {
				require.Equal(t, q, p.Queue, "key %s moved from queue %d to %d", k, q, p.Queue)
			}
			queues[k] = p.Queue
		}
	}
	return queues
}

// orderedGroup is an ordered group ordered by queue (the tests of this file); extra
// overrides any member, "ordering" included.
func orderedGroup(name, url, topic string, extra map[string]any) map[string]any {
	g := map[string]any{"name": name, "endpoint_url": url, "ordered": true, "ordering": "queue", "max_in_flight": 16, "timeout_ms": 2000,
		"retry_schedule": []int{1}, "max_attempts": 20, "consume_from": "earliest", "subscriptions": []map[string]any{{"topic": topic}}}
	for k, v := range extra {
		g[k] = v
	}
	return g
}

func keyNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "key-" + strconv.Itoa(i)
	}
	return out
}

// TestOrderedSerialPerQueueFlaky publishes keyed messages to an ordered group whose
// endpoint fails one POST in ten and answers slowly: every key's messages are
// acknowledged exactly in publish order, no queue ever has two POSTs open, and
// queues still flow in parallel.
func TestOrderedSerialPerQueueFlaky(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("ord", 4)
	r := heraldtest.NewReceiver(t)
	o := newOrderLog()
	o.respond(r, 15*time.Millisecond, func(orderedMsg, int) int {
		if rand.IntN(10) == 0 {
			return 500
		}
		return 204
	})
	r.SetSecret(h.CreateGroup(orderedGroup("g", r.URL, "ord", nil)))
	apiKey := h.CreateAPIKey("ord")
	keys, n := keyNames(8), 12
	publishSeq(t, h, apiKey, "ord", keys, 0, n)
	require.Eventually(t, func() bool {
		for _, k := range keys {
			if len(o.ackedOf(k)) < n {
				return false
			}
		}
		return true
	}, 60*time.Second, 10*time.Millisecond, "not every message was acknowledged")
	requireInOrder(t, o, keys, n, false)
	require.Equal(t, 1, o.maxPerQueue, "an ordered queue had more than one POST open")
	require.Greater(t, r.MaxInFlight(), 1, "queues of the group never flowed in parallel")
}

// TestOrderedRetryInPlaceBlocksOnlyItsQueue fails one key's first message twice: it
// is sent again in place with the same webhook-id and attempts 1, 2, 3; nothing
// later of its queue goes first, while another queue's messages all go through.
func TestOrderedRetryInPlaceBlocksOnlyItsQueue(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("ord", 2)
	r := heraldtest.NewReceiver(t)
	o := newOrderLog()
	const stuck = "stuck"
	o.respond(r, 0, func(m orderedMsg, tried int) int {
		if m.K == stuck && m.N == 0 && tried < 2 {
			return 500
		}
		return 204
	})
	r.SetSecret(h.CreateGroup(orderedGroup("g", r.URL, "ord", nil)))
	apiKey := h.CreateAPIKey("ord")
	// A second key on the other queue.
	keys := []string{stuck}
	qa := h.Publish(apiKey, "ord", map[string]any{"key": stuck, "body": orderedMsg{K: "probe"}})[0].Queue
	for i := 0; len(keys) < 2; i++ {
		k := "other" + strconv.Itoa(i)
		if p := h.Publish(apiKey, "ord", map[string]any{"key": k, "body": orderedMsg{K: "probe"}})[0]; p.Queue != qa {
			keys = append(keys, k)
		}
	}
	n := 5
	published := map[string][]heraldtest.Published{}
	for i := range n {
		for _, k := range keys {
			published[k] = append(published[k], h.Publish(apiKey, "ord", map[string]any{"key": k, "body": orderedMsg{K: k, N: i}})[0])
		}
	}
	other := keys[1]
	require.Eventually(t, func() bool { return len(o.ackedOf(other)) == n }, 15*time.Second, 5*time.Millisecond, "the other queue did not flow")
	require.Eventually(t, func() bool { return len(o.ackedOf(stuck)) == n }, 15*time.Second, 5*time.Millisecond, "the blocked queue never recovered")
	requireInOrder(t, o, keys, n, false)
	head := published[stuck][0].ID
	require.Equal(t, []string{"1", "2", "3"}, o.triesOf(head), "the head was not retried in place with counted attempts")
	o.mu.Lock()
	headAck, otherLast := o.firstAckAt[head], o.firstAckAt[published[other][n-1].ID]
	o.mu.Unlock()
	require.True(t, otherLast.Before(headAck), "the other queue waited for the blocked one")
	for _, p := range published[stuck][1:] {
		require.Len(t, o.triesOf(p.ID), 1, "message %s behind the blocked head was sent early or twice", p.ID)
	}
}

// TestOrderedPartialBatch answers a batch of five with its third message failed:
// the first two are done, the third to fifth are sent again as one POST (the same
// messages, attempt 2), and only then the next batch.
func TestOrderedPartialBatch(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("ord", 1)
	r := heraldtest.NewReceiver(t)
	var mu sync.Mutex
	var posts [][]string
	var attempts [][]int
	r.Body = func(d heraldtest.Delivery) string {
		var env struct {
			Messages []struct {
				ID      string `json:"id"`
				Attempt int    `json:"attempt"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(d.Body, &env)
		var ids []string
		var as []int
		for _, m := range env.Messages {
			ids = append(ids, m.ID)
			as = append(as, m.Attempt)
		}
		mu.Lock()
		defer mu.Unlock()
		posts = append(posts, ids)
		attempts = append(attempts, as)
		if len(posts) == 1 {
			return fmt.Sprintf(`{"failed":[%q]}`, ids[2])
		}
		return ""
	}
	r.Respond = func(heraldtest.Delivery) int { return 200 }
	r.SetSecret(h.CreateGroup(orderedGroup("g", r.URL, "ord", map[string]any{"batch_size": 5})))
	apiKey := h.CreateAPIKey("ord")
	msgs := make([]map[string]any, 10)
	for i := range msgs {
		msgs[i] = map[string]any{"key": "k", "body": orderedMsg{K: "k", N: i}}
	}
	pub := h.Publish(apiKey, "ord", msgs...)
	ids := make([]string, len(pub))
	for i, p := range pub {
		ids[i] = p.ID
	}
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(posts) >= 3 }, 15*time.Second, 5*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // absence: no POST beyond the three expected follows
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, [][]string{ids[0:5], ids[2:5], ids[5:10]}, posts)
	require.Equal(t, []int{2, 2, 2}, attempts[1])
	require.Equal(t, []int{1, 1, 1, 1, 1}, attempts[2])
}

// blockedQueues reads the stats endpoint's blocked queues.
func blockedQueues(t *testing.T, h *heraldtest.Herald, group string) []map[string]any {
	var st struct {
		BlockedQueues []map[string]any `json:"blocked_queues"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/"+group+"/stats", nil, 200), &st))
	return st.BlockedQueues
}

// TestOrderedExhaustedDeadLetter fails a queue's head for good: after max_attempts
// it becomes a dead letter and the messages behind it follow, in order.
func TestOrderedExhaustedDeadLetter(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("ord", 1)
	r := heraldtest.NewReceiver(t)
	o := newOrderLog()
	o.respond(r, 0, func(m orderedMsg, _ int) int {
		if m.N == 0 {
			return 500
		}
		return 204
	})
	r.SetSecret(h.CreateGroup(orderedGroup("g", r.URL, "ord", map[string]any{"max_attempts": 2})))
	apiKey := h.CreateAPIKey("ord")
	var pub []heraldtest.Published
	for i := range 4 {
		pub = append(pub, h.Publish(apiKey, "ord", map[string]any{"key": "k", "body": orderedMsg{K: "k", N: i}})[0])
	}
	require.Eventually(t, func() bool { return len(o.ackedOf("k")) == 3 }, 15*time.Second, 5*time.Millisecond)
	require.Equal(t, []int{1, 2, 3}, o.ackedOf("k"))
	require.Equal(t, []string{"1", "2"}, o.triesOf(pub[0].ID))
	var dl struct {
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/g/dead-letters", nil, 200), &dl))
	require.Len(t, dl.Items, 1)
	require.Equal(t, pub[0].ID, dl.Items[0]["message_id"])
	require.Eventually(t, func() bool { return len(blockedQueues(t, h, "g")) == 0 }, 5*time.Second, 20*time.Millisecond)
}

// TestOrderedExhaustedPause stops a queue on its exhausted head: stats show it
// paused with its attempts; resume sends it again; skip dead-letters it and the
// queue moves on in order.
func TestOrderedExhaustedPause(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("ord", 1)
	r := heraldtest.NewReceiver(t)
	o := newOrderLog()
	o.respond(r, 0, func(m orderedMsg, _ int) int {
		if m.N == 0 {
			return 500
		}
		return 204
	})
	r.SetSecret(h.CreateGroup(orderedGroup("g", r.URL, "ord", map[string]any{"max_attempts": 2, "ordered_on_exhausted": "pause"})))
	apiKey := h.CreateAPIKey("ord")
	var pub []heraldtest.Published
	for i := range 3 {
		pub = append(pub, h.Publish(apiKey, "ord", map[string]any{"key": "k", "body": orderedMsg{K: "k", N: i}})[0])
	}
	var b map[string]any
	require.Eventually(t, func() bool {
		bs := blockedQueues(t, h, "g")
		if len(bs) == 1 && bs[0]["paused"] == true {
			b = bs[0]
			return true
		}
		return false
	}, 15*time.Second, 20*time.Millisecond, "the queue never paused")
	require.Equal(t, pub[0].ID, b["message_id"])
	require.EqualValues(t, 2, b["attempts"])
	time.Sleep(500 * time.Millisecond) // absence: nothing behind the paused head is sent
	require.Empty(t, o.ackedOf("k"), "messages behind a paused head were sent")
	require.Len(t, o.triesOf(pub[0].ID), 2)

	q := strconv.FormatInt(pub[0].Queue, 10)
	h.Admin("POST", "/groups/g/queues/"+q+"/resume", nil, 202)
	require.Eventually(t, func() bool { return len(o.triesOf(pub[0].ID)) == 4 }, 15*time.Second, 10*time.Millisecond, "resume did not send the head again")
	require.Eventually(t, func() bool {
		bs := blockedQueues(t, h, "g")
		return len(bs) == 1 && bs[0]["paused"] == true
	}, 10*time.Second, 20*time.Millisecond)
	h.Admin("POST", "/groups/g/queues/"+q+"/skip", nil, 202)
	require.Eventually(t, func() bool { return len(o.ackedOf("k")) == 2 }, 15*time.Second, 5*time.Millisecond, "skip did not move the queue on")
	require.Equal(t, []int{1, 2}, o.ackedOf("k"))
	var dl struct {
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/g/dead-letters", nil, 200), &dl))
	require.Len(t, dl.Items, 1)
	var n int
	require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(*) FROM audit_log WHERE action IN ('group.queue.skip','group.queue.resume')").Scan(&n))
	require.Equal(t, 2, n)
}

// TestOrderedThrottle answers a queue's head with 429 and Retry-After once: it is
// sent again after the pause as the same attempt, and order holds.
func TestOrderedThrottle(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("ord", 1)
	r := heraldtest.NewReceiver(t)
	o := newOrderLog()
	var mu sync.Mutex
	throttled := false
	o.respond(r, 0, func(m orderedMsg, tried int) int {
		mu.Lock()
		defer mu.Unlock()
		if m.N == 1 && !throttled {
			throttled = true
			return 429
		}
		return 204
	})
	r.Header = func(heraldtest.Delivery) http.Header { return http.Header{"Retry-After": []string{"1"}} }
	r.SetSecret(h.CreateGroup(orderedGroup("g", r.URL, "ord", nil)))
	apiKey := h.CreateAPIKey("ord")
	var pub []heraldtest.Published
	for i := range 5 {
		pub = append(pub, h.Publish(apiKey, "ord", map[string]any{"key": "k", "body": orderedMsg{K: "k", N: i}})[0])
	}
	require.Eventually(t, func() bool { return len(o.ackedOf("k")) == 5 }, 15*time.Second, 5*time.Millisecond)
	requireInOrder(t, o, []string{"k"}, 5, false)
	require.Equal(t, []string{"1", "1"}, o.triesOf(pub[1].ID), "a throttled POST counted an attempt")
}

// TestOrderedTopicGrowth grows the topic while keyed messages flow: no key changes
// queue and every key's messages are acknowledged in order.
func TestOrderedTopicGrowth(t *testing.T) {
	t.Parallel()
	orderedTopicGrowth(t, "queue")
}

// TestOrderedByKeyTopicGrowth is TestOrderedTopicGrowth for a group ordered by
// key, which also never has two POSTs of one key open.
func TestOrderedByKeyTopicGrowth(t *testing.T) {
	t.Parallel()
	o := orderedTopicGrowth(t, "key")
	require.Equal(t, 1, o.maxPerKey, "a key had two POSTs open")
}

func orderedTopicGrowth(t *testing.T, ordering string) *orderLog {
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("ord", 2)
	r := heraldtest.NewReceiver(t)
	o := newOrderLog()
	o.respond(r, 3*time.Millisecond, func(orderedMsg, int) int { return 204 })
	r.SetSecret(h.CreateGroup(orderedGroup("g", r.URL, "ord", map[string]any{"ordering": ordering})))
	apiKey := h.CreateAPIKey("ord")
	keys, n := keyNames(8), 20
	before := publishSeq(t, h, apiKey, "ord", keys, 0, n/2)
	h.Admin("PATCH", "/topics/ord", map[string]any{"queues": 4}, 200)
	after := publishSeq(t, h, apiKey, "ord", keys, n/2, n)
	require.Equal(t, before, after, "keys moved when the topic grew")
	require.Eventually(t, func() bool {
		for _, k := range keys {
			if len(o.ackedOf(k)) < n {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond)
	requireInOrder(t, o, keys, n, false)
	return o
}

// TestOrderedTakeoverKeepsOrder kills -9 the dispatcher owning an ordered group while
// one of its POSTs is held open for 7 s: the dispatcher that takes the cursors over
// (after the dead owner's lease) waits out that POST (timeout_ms), so no queue ever
// has two POSTs open, and every key is acknowledged in order, with repeats only of
// acknowledged messages, in order.
func TestOrderedTakeoverKeepsOrder(t *testing.T) {
	t.Parallel()
	orderedHandOver(t, syscall.SIGKILL, "queue")
}

// TestOrderedByKeyTakeoverKeepsOrder is TestOrderedTakeoverKeepsOrder for a group
// ordered by key: no key ever has two POSTs open, and every key is acknowledged in
// order (repeats only of acknowledged messages, in order).
func TestOrderedByKeyTakeoverKeepsOrder(t *testing.T) {
	t.Parallel()
	orderedHandOver(t, syscall.SIGKILL, "key")
}

// TestOrderedByKeyGracefulReleaseWaits is TestOrderedGracefulReleaseWaits for a
// group ordered by key.
func TestOrderedByKeyGracefulReleaseWaits(t *testing.T) {
	t.Parallel()
	orderedHandOver(t, syscall.SIGTERM, "key")
}

// TestOrderedGracefulReleaseWaits stops the owning dispatcher gracefully while one of
// its POSTs is open: it releases the cursors at once, but marked held for timeout_ms,
// so the next owner, claiming them at once, still waits for that POST.
func TestOrderedGracefulReleaseWaits(t *testing.T) {
	t.Parallel()
	orderedHandOver(t, syscall.SIGTERM, "queue")
}

// orderedHandOver stops the dispatcher process owning an ordered group with sig while
// a POST of key-0 is held open 7 s, starts another, and checks order and one POST
// per queue (ordering queue) or per key (ordering key).
func orderedHandOver(t *testing.T, sig syscall.Signal, ordering string) {
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Worker: true}, nil)
	h.CreateTopic("ord", 2)
	victim, _ := startDispatcherProcess(t, h)
	r := heraldtest.NewReceiver(t)
	o := newOrderLog()
	keys, n := keyNames(4), 30
	held := make(chan struct{})
	var heldAt time.Time
	o.respond(r, 20*time.Millisecond, func(m orderedMsg, tried int) int {
		if m.K == keys[0] && m.N == 5 && tried == 0 {
			heldAt = time.Now()
			close(held)
			time.Sleep(7 * time.Second) // open while the owner goes and another claims the queue (≤ 4 s)
		}
		return 204
	})
	r.SetSecret(h.CreateGroup(orderedGroup("g", r.URL, "ord", map[string]any{"timeout_ms": 9000, "ordering": ordering})))
	apiKey := h.CreateAPIKey("ord")
	publishSeq(t, h, apiKey, "ord", keys, 0, n)
	select {
	case <-held:
	case <-time.After(15 * time.Second):
		t.Fatal("the held POST never arrived")
	}
	require.NoError(t, victim.Process.Signal(sig))
	stoppedAt := time.Now()
	_ = victim.Wait()
	startDispatcherProcess(t, h)
	require.Eventually(t, func() bool {
		for _, k := range keys {
			got := o.ackedOf(k)
			if len(got) == 0 || got[len(got)-1] != n-1 {
				return false
			}
		}
		return true
	}, 45*time.Second, 10*time.Millisecond, "not every message was acknowledged after the hand-over")
	t.Logf("%s acknowledged %v (owner stopped %v after the held POST arrived)", keys[0], o.ackedOf(keys[0]), stoppedAt.Sub(heldAt))
	requireInOrder(t, o, keys, n, true)
	if ordering == "key" {
		require.Equal(t, 1, o.maxPerKey, "the new owner sent a key while the old owner's POST of it was open")
		require.Greater(t, o.maxPerQueue, 1, "keys of one queue never flowed in parallel")
		return
	}
	require.Equal(t, 1, o.maxPerQueue, "the new owner sent while the old owner's POST was open")
}

// TestOrderedByKeyWorkerKilledMidPost kills -9 the worker process while a POST of
// key-0 is open in a group ordered by key: the other keys go on once a fresh worker
// runs, key-0 waits for its job's re-dispatch (no report, no heartbeat, past its
// deadline) and then finishes in order, never with two POSTs of one key open.
func TestOrderedByKeyWorkerKilledMidPost(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, nil)
	h.CreateTopic("ord", 1)
	worker := startWorkerProcess(t, h)
	r := heraldtest.NewReceiver(t)
	o := newOrderLog()
	keys, n := keyNames(3), 10
	held, release := make(chan struct{}), make(chan struct{})
	o.respond(r, 5*time.Millisecond, func(m orderedMsg, tried int) int {
		if m.K == keys[0] && m.N == 3 && tried == 0 {
			close(held)
			<-release // open until the worker that sent it is dead
		}
		return 204
	})
	r.SetSecret(h.CreateGroup(orderedGroup("g", r.URL, "ord", map[string]any{"ordering": "key"})))
	apiKey := h.CreateAPIKey("ord")
	publishSeq(t, h, apiKey, "ord", keys, 0, n)
	select {
	case <-held:
	case <-time.After(15 * time.Second):
		t.Fatal("the held POST never arrived")
	}
	require.NoError(t, worker.Process.Signal(syscall.SIGKILL))
	_ = worker.Wait()
	close(release)
	h.Start(app.Roles{Worker: true}) // a fresh worker
	require.Eventually(t, func() bool {
		for _, k := range keys {
			got := o.ackedOf(k)
			if len(got) == 0 || got[len(got)-1] != n-1 {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "a key stalled after its worker was killed mid-POST")
	t.Logf("%s acknowledged %v", keys[0], o.ackedOf(keys[0]))
	requireInOrder(t, o, keys, n, true)
	require.Equal(t, 1, o.maxPerKey, "a key had two POSTs open")
}
