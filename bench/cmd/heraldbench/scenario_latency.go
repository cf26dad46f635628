package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/bench/internal/procstat"
)

// scenarioLatency is (d): publish-to-receipt latency for a group created with
// consume_from latest; single-message publishes paced at latencyRate for
// latencyDur, then 20 lone messages 200 ms apart.
func (b *bench) scenarioLatency(ctx context.Context) *result {
	r := &result{key: "d", title: fmt.Sprintf("latency (%d msg/s single-message publishes for %s, then 20 lone messages)", b.opts.latencyRate, b.opts.latencyDur)}
	topic, group := "bench.d", "bench-d"
	queues, err := b.c.createTopic(ctx, topic, 4)
	if err != nil {
		return r.fail(err)
	}
	sk, url := b.rcv.newSink("d")
	created := time.Now()
	secret, err := b.c.createGroup(ctx, groupSpec{name: group, topic: topic, endpoint: url, consumeFrom: "latest", batchSize: 1, maxInFlight: 64})
	if err != nil {
		return r.fail(err)
	}
	if err := sk.setSecret(secret); err != nil {
		r.note("signature check off: %v", err)
	}
	lt := &latencyRun{b: b, sk: sk, topic: topic, sent: map[string]time.Time{}, answered: map[string]time.Time{}}

	// Warm-up: the first message published right after the 201 must arrive.
	if _, err := lt.publishOne(ctx, -1); err != nil {
		return r.fail(fmt.Errorf("warm-up publish: %w", err))
	}
	wctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	ok := sk.waitDistinct(wctx, 1)
	cancel()
	if !ok {
		return r.fail(fmt.Errorf("warm-up message published right after group creation not received within %s", b.opts.phaseTimeout))
	}
	r.info("group create to first receipt", sk.stats().last.Sub(created).Round(time.Millisecond).String())

	// Paced phase.
	n := b.opts.latencyRate * int(b.opts.latencyDur/time.Second)
	resetOK := procstat.ResetPeakRSS(b.procs.herald) == nil
	conns0 := b.rcv.conns.Load()
	before := b.procs.snap()
	ids, pubDurs, errs := lt.paced(ctx, n, time.Second/time.Duration(b.opts.latencyRate))
	pctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	complete := sk.waitDistinct(pctx, len(ids)+1)
	cancel()
	use := before.until(b.procs.snap())
	lats, missing := lt.latencies(ids)
	b.logf("d: paced %d sent, %d received", len(ids), len(lats))
	r.info("messages (paced)", fmt.Sprintf("%d published, %d errors, %d not received", len(ids), errs, missing))
	if !complete {
		r.note("paced phase: %d of %d messages not received within %s", missing, len(ids), b.opts.phaseTimeout)
	}
	if errs > 0 {
		r.note("paced phase: %d publish errors; first: %v", errs, lt.firstErr)
	}
	if len(lats) > 0 {
		p50, p90, p99, mx := pct(lats, 0.50), pct(lats, 0.90), pct(lats, 0.99), lats[len(lats)-1]
		r.check("latency p50", ms(p50), "≤ 10 ms", p50 <= 10*time.Millisecond && missing == 0)
		r.info("latency p90", ms(p90))
		r.check("latency p99", ms(p99), "≤ 50 ms", p99 <= 50*time.Millisecond && missing == 0)
		r.info("latency max", ms(mx))
	} else {
		r.check("latency p50", "no message received", "≤ 10 ms", false)
	}
	slices.Sort(pubDurs)
	if len(pubDurs) > 0 {
		r.info("publish request time p50 / p99", ms(pct(pubDurs, 0.5))+" / "+ms(pct(pubDurs, 0.99)))
	}
	if after := lt.afterAnswer(ids); len(after) > 0 {
		r.info("publish answer → receipt p50 / p99", ms(pct(after, 0.5))+" / "+ms(pct(after, 0.99))+" (negative: delivered before the answer)")
	}
	r.info("TCP connections Herald opened to the receiver (paced)", fmt.Sprint(b.rcv.conns.Load()-conns0))
	r.addCPURows(" (paced)", use, len(lats))
	r.peakRSSRow(b.procs.herald, resetOK)

	// Lone messages.
	var lone, lonePub []time.Duration
	for i := range 20 {
		t0 := time.Now()
		id, err := lt.publishOne(ctx, n+i)
		if err == nil {
			lonePub = append(lonePub, time.Since(t0))
			lt.waitFor(ctx, id, 2*time.Second)
			if d, ok := sk.lookup(id); ok {
				lone = append(lone, d.at.Sub(lt.sentAt(id)))
			}
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(time.Until(t0.Add(200 * time.Millisecond)))
	}
	slices.Sort(lone)
	if len(lone) > 0 {
		med := pct(lone, 0.5)
		r.check("lone message latency, median", fmt.Sprintf("%s (min %s, max %s, %d of 20 received)", ms(med), ms(lone[0]), ms(lone[len(lone)-1]), len(lone)), "≤ 3 ms", med <= 3*time.Millisecond && len(lone) == 20)
	} else {
		r.check("lone message latency, median", "no lone message received", "≤ 3 ms", false)
	}
	if len(lonePub) > 0 {
		slices.Sort(lonePub)
		r.info("lone message publish request time, median", ms(pct(lonePub, 0.5)))
	}
	time.Sleep(300 * time.Millisecond)
	st := sk.stats()
	r.info("duplicate deliveries", fmt.Sprint(st.dups))
	r.info("webhook-signature (1 in 200 checked)", fmt.Sprintf("%d of %d sampled signatures valid", st.sigOK, st.sigOK+st.sigBad))
	if err := b.c.pauseGroup(ctx, group); err != nil {
		r.note("pause %s after the scenario: %v", group, err)
	}
	r.storageRow(ctx, b.db, b.schema, queues)
	return r
}

// latencyRun publishes single messages and remembers when each was sent.
type latencyRun struct {
	b        *bench
	sk       *sink
	topic    string
	mu       sync.Mutex
	sent     map[string]time.Time
	answered map[string]time.Time
	firstErr error
}

// publishOne publishes one 1 KiB message; the send time is taken just before the POST.
func (lt *latencyRun) publishOne(ctx context.Context, seq int) (string, error) {
	env := envelope([]outMsg{{body: padBody(seq, 1024)}})
	t := time.Now()
	ids, err := lt.b.c.publish(ctx, lt.topic, env)
	at := time.Now()
	if err == nil && len(ids) != 1 {
		err = fmt.Errorf("answer lists %d ids for 1 message", len(ids))
	}
	if err != nil {
		return "", err
	}
	lt.mu.Lock()
	lt.sent[ids[0].ID] = t
	lt.answered[ids[0].ID] = at
	lt.mu.Unlock()
	return ids[0].ID, nil
}

func (lt *latencyRun) sentAt(id string) time.Time {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.sent[id]
}

// paced publishes n messages on a fixed schedule (one every interval, from a pool of
// 64 goroutines so a slow answer does not delay the next send). It returns the ids,
// the publish request times and the number of failed publishes.
func (lt *latencyRun) paced(ctx context.Context, n int, interval time.Duration) ([]string, []time.Duration, int) {
	jobs := make(chan int, 1024)
	var (
		mu   sync.Mutex
		ids  []string
		durs []time.Duration
		errs int
		wg   sync.WaitGroup
	)
	for range 64 {
		wg.Go(func() {
			for seq := range jobs {
				t := time.Now()
				id, err := lt.publishOne(ctx, seq)
				d := time.Since(t)
				mu.Lock()
				if err != nil {
					errs++
					if lt.firstErr == nil {
						lt.firstErr = err
					}
				} else {
					ids = append(ids, id)
					durs = append(durs, d)
				}
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return ids, durs, errs
}

// latencies returns sorted publish-to-receipt times of ids and how many never arrived.
func (lt *latencyRun) latencies(ids []string) ([]time.Duration, int) {
	var out []time.Duration
	missing := 0
	for _, id := range ids {
		d, ok := lt.sk.lookup(id)
		if !ok {
			missing++
			continue
		}
		out = append(out, d.at.Sub(lt.sentAt(id)))
	}
	slices.Sort(out)
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

// pct returns the q-quantile (nearest rank) of sorted durations.
func pct(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
