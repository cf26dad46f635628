package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/bench/internal/procstat"
)

// drainSpec is a backlog-drain scenario: publish n messages with no group, then
// create a group from earliest and time until every message was received.
type drainSpec struct {
	key, title string
	n          int
	gen        func(int) outMsg
	goalRate   float64 // messages/s
	maxBytes   int     // body bytes per publish request
}

// scenarioDrain1K is (a): 1 KiB JSON messages.
func (b *bench) scenarioDrain1K(ctx context.Context) *result {
	return b.drain(ctx, drainSpec{
		key: "a", title: "drain a 1 KiB backlog", n: b.opts.drainN, goalRate: 10000, maxBytes: 4 << 20,
		gen: func(i int) outMsg { return outMsg{body: padBody(i, 1024)} },
	})
}

// scenarioDrainGitHub is (b): the GitHub fixtures, tagged with their event names.
func (b *bench) scenarioDrainGitHub(ctx context.Context) *result {
	fx := b.fixtures
	return b.drain(ctx, drainSpec{
		key: "b", title: fmt.Sprintf("drain a GitHub-payload backlog (%d fixtures, cycled)", len(fx)), n: b.opts.githubN, goalRate: 5000, maxBytes: 4 << 20,
		gen: func(i int) outMsg { f := fx[i%len(fx)]; return outMsg{body: f.body, tag: f.event} },
	})
}

func (b *bench) drain(ctx context.Context, s drainSpec) *result {
	r := &result{key: s.key, title: s.title}
	topic, group := "bench."+s.key, "bench-"+s.key
	queues, err := b.c.createTopic(ctx, topic, 4)
	if err != nil {
		return r.fail(err)
	}
	r.info("messages", fmt.Sprint(s.n))

	// Publish the backlog; no group is subscribed yet.
	pctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	before := b.procs.snap()
	pub, err := publishSeries(pctx, b.c, topic, s.n, 100, s.maxBytes, 8, s.gen)
	pubUse := before.until(b.procs.snap())
	cancel()
	if err != nil {
		return r.fail(fmt.Errorf("publish backlog: %w", err))
	}
	b.logf("%s: published %d messages in %s", s.key, s.n, pub.elapsed.Round(time.Millisecond))
	r.info("backlog publish (8 publishers, 100/request)", fmt.Sprintf("%.0f msg/s (%s)", float64(s.n)/pub.elapsed.Seconds(), pub.elapsed.Round(time.Millisecond)))

	// Drain: from the group create request until the last distinct id arrived.
	sk, url := b.rcv.newSink(s.key)
	resetOK := procstat.ResetPeakRSS(b.procs.herald) == nil
	conns0 := b.rcv.conns.Load()
	before = b.procs.snap()
	start := time.Now()
	secret, err := b.c.createGroup(ctx, groupSpec{name: group, topic: topic, endpoint: url, consumeFrom: "earliest", batchSize: 1, maxInFlight: 64})
	if err != nil {
		return r.fail(err)
	}
	if err := sk.setSecret(secret); err != nil {
		r.note("signature check off: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	complete := sk.waitDistinct(dctx, s.n)
	cancel()
	use := before.until(b.procs.snap())
	st := sk.stats()
	goal := fmt.Sprintf("≥ %.0f msg/s", s.goalRate)
	if complete {
		elapsed := st.last.Sub(start)
		rate := float64(s.n) / elapsed.Seconds()
		r.check("drain throughput", fmt.Sprintf("%.0f msg/s (%s)", rate, elapsed.Round(time.Millisecond)), goal, rate >= s.goalRate)
	} else {
		r.check("drain throughput", fmt.Sprintf("incomplete: %d of %d received in %s", st.distinct, s.n, b.opts.phaseTimeout), goal, false)
		r.note("drain did not finish within %s: %d of %d distinct ids received, %d requests in all", b.opts.phaseTimeout, st.distinct, s.n, st.total)
	}
	b.logf("%s: drained %d of %d", s.key, st.distinct, s.n)
	r.timelineRow(sk, start)
	r.info("TCP connections Herald opened to the receiver", fmt.Sprint(b.rcv.conns.Load()-conns0))
	r.addCPURows(" (drain)", use, int(st.distinct))
	r.addCPURows(" (publish)", pubUse, s.n)
	r.peakRSSRow(b.procs.herald, resetOK)

	time.Sleep(500 * time.Millisecond) // let late duplicates show
	b.verify(r, sk, pub)
	if err := b.c.pauseGroup(ctx, group); err != nil {
		r.note("pause %s after the scenario: %v", group, err)
	}
	r.storageRow(ctx, b.db, b.schema, queues)
	return r
}

// verify compares received body hashes with the published ones, by message id.
func (b *bench) verify(r *result, sk *sink, pub bulkResult) {
	var missing, mismatched int
	var firstBad string
	for id, want := range pub.want {
		d, ok := sk.lookup(id)
		switch {
		case !ok:
			missing++
		case d.hash != want:
			mismatched++
			if firstBad == "" {
				firstBad = id
			}
		}
	}
	st := sk.stats()
	unexpected := st.distinct - int64(len(pub.want)-missing)
	bodiesOK := missing == 0 && mismatched == 0 && unexpected == 0
	r.check("bodies byte-identical (SHA-256 by webhook-id)", fmt.Sprintf("%d missing, %d differ, %d unknown ids", missing, mismatched, unexpected), "0 / 0 / 0", bodiesOK)
	if firstBad != "" {
		r.note("first body that differs: %s", firstBad)
	}
	r.info("duplicate deliveries", fmt.Sprint(st.dups))
	sig := fmt.Sprintf("%d of %d sampled signatures valid", st.sigOK, st.sigOK+st.sigBad)
	if st.noID > 0 {
		sig += fmt.Sprintf("; %d requests without webhook-id", st.noID)
	}
	r.info("webhook-signature (1 in 200 checked)", sig)
}

// timelineRow describes how steadily the backlog drained.
func (r *result) timelineRow(sk *sink, start time.Time) {
	first, per := sk.timeline(start)
	v := fmt.Sprintf("first delivery %s after group create", first.Round(time.Millisecond))
	if len(per) > 0 {
		s := slices.Clone(per)
		slices.Sort(s)
		v += fmt.Sprintf("; per whole second: min %d, median %d, max %d (%v)", s[0], s[len(s)/2], s[len(s)-1], per)
	}
	r.info("drain timeline", v)
}
