package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"
)

// bulkResult is what publishing a numbered series of messages produced.
type bulkResult struct {
	want     map[string][sha256.Size]byte // body hash by message id
	requests int
	elapsed  time.Duration
}

// publishSeries publishes messages gen(0) … gen(n-1) to topic in requests of at most
// perReq messages and maxBytes of bodies, from `workers` concurrent publishers. It
// stops at the first error.
func publishSeries(ctx context.Context, c *apiClient, topic string, n, perReq, maxBytes, workers int, gen func(int) outMsg) (bulkResult, error) {
	type req struct {
		env    []byte
		hashes [][sha256.Size]byte
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reqs := make(chan req, workers)
	go func() { // producer: cuts requests in order
		defer close(reqs)
		var batch []outMsg
		size := 0
		flush := func() bool {
			r := req{env: envelope(batch)}
			for _, m := range batch {
				r.hashes = append(r.hashes, hashOf(m.body))
			}
			batch, size = batch[:0], 0
			select {
			case reqs <- r:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for i := range n {
			m := gen(i)
			if len(batch) > 0 && (len(batch) == perReq || size+len(m.body) > maxBytes) {
				if !flush() {
					return
				}
			}
			batch = append(batch, m)
			size += len(m.body)
		}
		if len(batch) > 0 {
			flush()
		}
	}()

	res := bulkResult{want: make(map[string][sha256.Size]byte, n)}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for r := range reqs {
				ids, err := c.publish(ctx, topic, r.env)
				if err == nil && len(ids) != len(r.hashes) {
					err = fmt.Errorf("publish to %s: sent %d messages, answer lists %d ids", topic, len(r.hashes), len(ids))
				}
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					continue
				}
				res.requests++
				for i, id := range ids {
					res.want[id.ID] = r.hashes[i]
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if firstErr == nil && len(res.want) != n {
		firstErr = fmt.Errorf("publish to %s: %d distinct ids for %d messages (%v)", topic, len(res.want), n, ctx.Err())
	}
	return res, firstErr
}
