package e2e

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/heraldtest"
)

// BenchmarkOrderedCeiling measures an ordered group's throughput against an endpoint
// that answers in 1 ms, over 8 queues with one key each: the ceiling is queues ÷
// endpoint latency (8,000 messages/s here) less Herald's per-POST cost, and
// batch_size raises it. It reports messages/s from the first to the last
// acknowledgement. Run: go test -run '^$' -bench BenchmarkOrderedCeiling -benchtime 1x ./internal/e2e/
func BenchmarkOrderedCeiling(b *testing.B) {
	for _, batch := range []int{1, 10} {
		b.Run("batch"+strconv.Itoa(batch), func(b *testing.B) {
			for range b.N {
				orderedCeiling(b, batch)
			}
		})
	}
}

func orderedCeiling(b *testing.B, batch int) {
	const queues, perKey = 8, 1000
	h := heraldtest.StartHerald(b, nil)
	h.CreateTopic("ord", queues)
	r := heraldtest.NewReceiver(b)
	var acked atomic.Int64
	var first, last atomic.Int64
	r.Respond = func(d heraldtest.Delivery) int {
		time.Sleep(time.Millisecond) // latency: a 1 ms endpoint
		now := time.Now().UnixNano()
		first.CompareAndSwap(0, now)
		last.Store(now)
		acked.Add(1)
		return 204
	}
	r.SetSecret(h.CreateGroup(orderedGroup("g", r.URL, "ord", map[string]any{"batch_size": batch, "max_in_flight": 64})))
	apiKey := h.CreateAPIKey("ord")
	// One key per queue: probe keys until every queue has one.
	keys := map[int64]string{}
	for i := 0; len(keys) < queues; i++ {
		k := "k" + strconv.Itoa(i)
		if p := h.Publish(apiKey, "ord", map[string]any{"key": k, "body": 0})[0]; keys[p.Queue] == "" {
			keys[p.Queue] = k
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for acked.Load() < int64(len(keys)) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // latency: a benchmark polls its counter (no testing.T to fail)
	}
	acked.Store(0)
	first.Store(0)
	b.ResetTimer()
	for _, k := range keys {
		msgs := make([]map[string]any, 0, 500)
		for i := range perKey {
			msgs = append(msgs, map[string]any{"key": k, "body": i})
			if len(msgs) == 500 {
				h.Publish(apiKey, "ord", msgs...)
				msgs = msgs[:0]
			}
		}
	}
	want := int64(queues * perKey / batch)
	deadline = time.Now().Add(60 * time.Second)
	for acked.Load() < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // latency: a benchmark polls its counter (no testing.T to fail)
	}
	b.StopTimer()
	if acked.Load() < want {
		b.Fatalf("only %d of %d POSTs acknowledged", acked.Load(), want)
	}
	secs := float64(last.Load()-first.Load()) / 1e9
	b.ReportMetric(float64(queues*perKey)/secs, "msgs/s")
	b.ReportMetric(float64(want)/secs, "posts/s")
	h.Stop()
}
