package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/bench/internal/procstat"
)

// scenarioPublish is (c): publish throughput with no group subscribed. Each of the
// publishers posts its own prebuilt 100-message request of 1 KiB bodies in a loop,
// until publishDur has passed or publishN messages are claimed.
func (b *bench) scenarioPublish(ctx context.Context) *result {
	const perReq, goalRate = 100, 40000
	workers := b.opts.publishers
	r := &result{key: "c", title: fmt.Sprintf("publish throughput (%d publishers, %d × 1 KiB per request)", workers, perReq)}
	topic := "bench.c"
	queues, err := b.c.createTopic(ctx, topic, 4)
	if err != nil {
		return r.fail(err)
	}
	envs := make([][]byte, workers)
	for w := range envs {
		msgs := make([]outMsg, perReq)
		for i := range msgs {
			msgs[i] = outMsg{body: padBody(w*perReq+i, 1024)}
		}
		envs[w] = envelope(msgs)
	}

	ctx, cancel := context.WithTimeout(ctx, b.opts.publishDur+b.opts.phaseTimeout)
	defer cancel()
	var (
		claimed, done, requests, failed atomic.Int64
		mu                              sync.Mutex
		firstErr                        error
		wg                              sync.WaitGroup
	)
	resetOK := procstat.ResetPeakRSS(b.procs.herald) == nil
	before := b.procs.snap()
	start := time.Now()
	deadline := start.Add(b.opts.publishDur)
	for w := range workers {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if claimed.Add(perReq) > int64(b.opts.publishN) {
					return
				}
				ids, err := b.c.publish(ctx, topic, envs[w])
				if err == nil && len(ids) != perReq {
					err = fmt.Errorf("sent %d messages, answer lists %d ids", perReq, len(ids))
				}
				if err != nil {
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				requests.Add(1)
				done.Add(perReq)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	use := before.until(b.procs.snap())
	n := done.Load()
	rate := float64(n) / elapsed.Seconds()
	b.logf("c: published %d messages in %s", n, elapsed.Round(time.Millisecond))
	r.check("publish throughput", fmt.Sprintf("%.0f msg/s (%d messages, %d requests in %s)", rate, n, requests.Load(), elapsed.Round(time.Millisecond)), fmt.Sprintf("≥ %d msg/s", goalRate), rate >= goalRate)
	r.info("mean request time", fmt.Sprintf("%.1f ms", float64(elapsed.Milliseconds())*float64(workers)/float64(max(requests.Load(), 1))))
	if f := failed.Load(); f > 0 {
		r.check("failed publish requests", fmt.Sprint(f), "0", false)
		r.note("first publish error: %v", firstErr)
	}
	r.addCPURows("", use, perMessage(int(n)), 0)
	r.peakRSSRow(b.procs.herald, resetOK)
	r.storageRow(ctx, b.db, b.schema, queues)
	return r
}
