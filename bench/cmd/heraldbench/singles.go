package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// latencyRun publishes single 1 KiB messages to one topic and remembers, per message
// id, when it was sent, when the answer came and the SHA-256 of its body. sk is the
// sink of the topic's (first) group. Safe for concurrent publishers.
type latencyRun struct {
	b        *bench
	sk       *sink
	topic    string
	mu       sync.Mutex
	sent     map[string]time.Time
	answered map[string]time.Time
	want     map[string][sha256.Size]byte
	firstErr error
}

func newLatencyRun(b *bench, sk *sink, topic string) *latencyRun {
	return &latencyRun{b: b, sk: sk, topic: topic, sent: map[string]time.Time{}, answered: map[string]time.Time{}, want: map[string][sha256.Size]byte{}}
}

// publishOne publishes one 1 KiB message; the send time is taken just before the POST.
func (lt *latencyRun) publishOne(ctx context.Context, seq int) (string, error) {
	body := padBody(seq, 1024)
	env := envelope([]outMsg{{body: body}})
	t := time.Now()
	ids, err := lt.b.c.publish(ctx, lt.topic, env)
	at := time.Now()
	if err == nil && len(ids) != 1 {
		err = fmt.Errorf("answer lists %d ids for 1 message", len(ids))
	}
	if err != nil {
		return "", err
	}
	sum := hashOf(body)
	lt.mu.Lock()
	lt.sent[ids[0].ID] = t
	lt.answered[ids[0].ID] = at
	lt.want[ids[0].ID] = sum
	lt.mu.Unlock()
	return ids[0].ID, nil
}

func (lt *latencyRun) sentAt(id string) time.Time {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.sent[id]
}

// publishStats is what a series of single-message publishes produced: the ids in
// the order their answers came, each request's time, and the failures.
type publishStats struct {
	ids         []string
	durs        []time.Duration
	errs        int
	first, last time.Time // send of the first request, answer of the last
}

// tally adds one request's outcome to ps under lt's lock.
func (lt *latencyRun) tally(ps *publishStats, id string, d time.Duration, err error) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if err != nil {
		ps.errs++
		if lt.firstErr == nil {
			lt.firstErr = err
		}
		return
	}
	ps.ids = append(ps.ids, id)
	ps.durs = append(ps.durs, d)
}

// paced publishes n messages on a fixed schedule (one every interval, from a pool of
// 64 goroutines so a slow answer does not delay the next send).
func (lt *latencyRun) paced(ctx context.Context, n int, interval time.Duration) publishStats {
	return lt.pacedBy(ctx, n, interval, 64)
}

// pacedBy publishes n messages on a fixed schedule (one every interval) from a pool
// of `workers` goroutines.
func (lt *latencyRun) pacedBy(ctx context.Context, n int, interval time.Duration, workers int) publishStats {
	jobs := make(chan int, 1024)
	var (
		ps publishStats
		wg sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for seq := range jobs {
				t := time.Now()
				id, err := lt.publishOne(ctx, seq)
				lt.tally(&ps, id, time.Since(t), err)
			}
		})
	}
	ps.first = time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if d := time.Until(ps.first.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	ps.last = time.Now()
	return ps
}

// unpaced runs `workers` publishers that each send single-message requests back to
// back, sequence numbers from seq0 on, until dur has passed or limit messages were
// claimed.
func (lt *latencyRun) unpaced(ctx context.Context, workers int, dur time.Duration, limit, seq0 int) publishStats {
	var (
		ps      publishStats
		wg      sync.WaitGroup
		claimed atomic.Int64
	)
	ps.first = time.Now()
	deadline := ps.first.Add(dur)
	for range workers {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				seq := int(claimed.Add(1)) - 1
				if seq >= limit {
					return
				}
				t := time.Now()
				id, err := lt.publishOne(ctx, seq0+seq)
				lt.tally(&ps, id, time.Since(t), err)
			}
		})
	}
	wg.Wait()
	ps.last = time.Now()
	return ps
}

// latencies returns sorted publish-to-receipt times of ids at the run's sink and how
// many never arrived there.
func (lt *latencyRun) latencies(ids []string) ([]time.Duration, int) {
	out, missing := lt.latenciesAt(lt.sk, ids)
	slices.Sort(out)
	return out, missing
}

// latenciesAt returns publish-to-receipt times of ids at sink sk, unsorted, and how
// many never arrived there.
func (lt *latencyRun) latenciesAt(sk *sink, ids []string) ([]time.Duration, int) {
	out := make([]time.Duration, 0, len(ids))
	missing := 0
	for _, id := range ids {
		d, ok := sk.lookup(id)
		if !ok {
			missing++
			continue
		}
		out = append(out, d.at.Sub(lt.sentAt(id)))
	}
	return out, missing
}

// afterAnswer returns sorted times from each publish answer to the receipt.
func (lt *latencyRun) afterAnswer(ids []string) []time.Duration {
	var out []time.Duration
	for _, id := range ids {
		if d, ok := lt.sk.lookup(id); ok {
			lt.mu.Lock()
			out = append(out, d.at.Sub(lt.answered[id]))
			lt.mu.Unlock()
		}
	}
	slices.Sort(out)
	return out
}

// waitFor polls until id was received or timeout passed.
func (lt *latencyRun) waitFor(ctx context.Context, id string, timeout time.Duration) {
	end := time.Now().Add(timeout)
	for time.Now().Before(end) && ctx.Err() == nil {
		if _, ok := lt.sk.lookup(id); ok {
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// published returns the body hash of every message published so far, by id.
func (lt *latencyRun) published() bulkResult {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return bulkResult{want: maps.Clone(lt.want)}
}
