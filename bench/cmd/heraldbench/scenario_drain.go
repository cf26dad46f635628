package main

import (
	"context"
	"crypto/sha256"
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
	r.timelineRow("drain timeline", sk, start, "group create")
	r.info("TCP connections Herald opened to the receiver", fmt.Sprint(b.rcv.conns.Load()-conns0))
	r.addCPURows(" (drain)", use, perMessage(int(st.distinct)), 0)
	r.addCPURows(" (publish)", pubUse, perMessage(s.n), 0)
	r.peakRSSRow(b.procs.herald, resetOK)

	time.Sleep(500 * time.Millisecond) // let late duplicates show
	b.verify(r, sk, pub)
	if err := b.c.pauseGroup(ctx, group); err != nil {
		r.note("pause %s after the scenario: %v", group, err)
	}
	r.storageRow(ctx, b.db, b.schema, queues)
	return r
}

// verify compares received body hashes with the published ones, by message id, and
// adds the duplicates and the sampled signature check.
func (b *bench) verify(r *result, sk *sink, pub bulkResult) {
	bc := compareBodies(sk, pub.want)
	r.check("bodies byte-identical (SHA-256 by webhook-id)", fmt.Sprintf("%d missing, %d differ, %d unknown ids", bc.missing, bc.mismatched, bc.unexpected),
		"0 / 0 / 0", bc.ok())
	if bc.firstBad != "" {
		r.note("first body that differs: %s", bc.firstBad)
	}
	st := sk.stats()
	r.info("duplicate deliveries", fmt.Sprint(st.dups))
	r.info("webhook-signature (1 in 200 checked)", signatureText(st))
}

// bodyCheck is how a sink's receipts compare with what was published.
type bodyCheck struct {
	missing, mismatched int   // published ids never received; received with another body
	unexpected          int64 // received ids that were never published
	firstBad            string
}

func (c bodyCheck) ok() bool { return c.missing == 0 && c.mismatched == 0 && c.unexpected == 0 }

// compareBodies matches every published id (want: body SHA-256 by id) with the first
// receipt of that webhook-id at sk.
func compareBodies(sk *sink, want map[string][sha256.Size]byte) bodyCheck {
	var c bodyCheck
	for id, h := range want {
		d, ok := sk.lookup(id)
		switch {
		case !ok:
			c.missing++
		case d.hash != h:
			c.mismatched++
			if c.firstBad == "" {
				c.firstBad = id
			}
		}
	}
	c.unexpected = sk.stats().distinct - int64(len(want)-c.missing)
	return c
}

// signatureText describes the sampled signature check of a sink.
func signatureText(st sinkStats) string {
	sig := fmt.Sprintf("%d of %d sampled signatures valid", st.sigOK, st.sigOK+st.sigBad)
	if st.noID > 0 {
		sig += fmt.Sprintf("; %d requests without webhook-id", st.noID)
	}
	return sig
}

// timelineRow adds how steadily receipts came: the first receipt after start (the
// moment called since) and distinct receipts per whole second after it.
func (r *result) timelineRow(label string, sk *sink, start time.Time, since string) {
	first, per := sk.timeline(start)
	v := fmt.Sprintf("first delivery %s after %s", first.Round(time.Millisecond), since)
	if len(per) > 0 {
		s := slices.Clone(per)
		slices.Sort(s)
		v += fmt.Sprintf("; per whole second: min %d, median %d, max %d (%v)", s[0], s[len(s)/2], s[len(s)-1], per)
	}
	r.info(label, v)
}
