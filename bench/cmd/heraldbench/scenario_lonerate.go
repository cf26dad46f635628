package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// scenarioLoneRate is (l): the trickle a webhook user feels beside the crowd, in one
// run. One topic of 4 queues, one group (batch 1), 1 KiB bodies. First -lone-busy-rate
// (default 1,000) msg/s from -lone-busy-publishers (16) for -lone-busy-duration
// (10 s); then -lone-n (100) messages at -lone-rate (5) msg/s from one publisher, each
// alone on the path. Latency runs from just before the publish request to the
// receiver's handler being entered (the POST's head read); the publisher's
// connections are kept alive, so the lone publisher reuses a warm one. With Herald's
// stage trace on (-stage-trace), the time of lone and crowd messages is broken down by
// stage from Herald's own timestamps, which name each message. Goals: lone median
// ≤ 2 ms, p99 ≤ 5 ms.
func (b *bench) scenarioLoneRate(ctx context.Context) *result {
	o := b.opts
	r := &result{key: "l", title: fmt.Sprintf("lone messages at %d msg/s beside %d msg/s from %d publishers (one group, batch 1, 1 KiB)",
		o.loneRate, o.loneBusyRate, o.loneBusyPublishers)}
	lt, err := b.trickleGroup(ctx, r, "l")
	if err != nil {
		return r.fail(err)
	}

	// The crowd.
	n := o.loneBusyRate * int(o.loneBusyDur/time.Second)
	traced := b.drainStageTrace(ctx) == nil
	end := b.startWindow(ctx)
	ps := lt.pacedBy(ctx, n, time.Second/time.Duration(o.loneBusyRate), o.loneBusyPublishers)
	wctx, cancel := context.WithTimeout(ctx, o.phaseTimeout)
	lt.sk.waitDistinct(wctx, len(ps.ids)+1)
	cancel()
	use := end()
	lats, missing := lt.firstByte(ps.ids)
	r.info(fmt.Sprintf("%d msg/s: messages", o.loneBusyRate), fmt.Sprintf("%d published, %d errors, %d not received", len(ps.ids), ps.errs, missing))
	r.latencyRows(fmt.Sprintf("%d msg/s latency", o.loneBusyRate), lats, missing, 0, 0)
	r.publishRows(ps, lt.firstErr)
	r.addLiveRows(fmt.Sprintf(" (%d msg/s)", o.loneBusyRate), use, perMessage(len(ps.ids)), liveGoals{})
	var crowdMarks []stageMark
	if traced {
		var err error
		if crowdMarks, err = b.fetchStageTrace(ctx); err != nil {
			r.note("stage trace: %v", err)
			traced = false
		}
	}

	// The trickle. The pause lets the crowd's last reports and commits settle.
	time.Sleep(2 * time.Second)
	if traced {
		traced = b.drainStageTrace(ctx) == nil
	}
	interval := time.Second / time.Duration(o.loneRate)
	end = b.startWindow(ctx)
	var ids []string
	t0 := time.Now()
	for i := 0; i < o.loneN && ctx.Err() == nil; i++ {
		time.Sleep(time.Until(t0.Add(time.Duration(i) * interval)))
		id, err := lt.publishOne(ctx, n+i)
		if err != nil {
			r.note("lone publish %d: %v", i, err)
			continue
		}
		ids = append(ids, id)
	}
	wctx, cancel = context.WithTimeout(ctx, o.phaseTimeout)
	lt.sk.waitDistinct(wctx, len(ps.ids)+1+len(ids))
	cancel()
	use = end()
	lone, missing := lt.firstByte(ids)
	label := fmt.Sprintf("lone latency at %d msg/s", o.loneRate)
	r.info(fmt.Sprintf("%d msg/s: messages", o.loneRate), fmt.Sprintf("%d published, %d not received", len(ids), missing))
	r.latencyRows(label, lone, missing, 2*time.Millisecond, 5*time.Millisecond)
	r.addLiveRows(fmt.Sprintf(" (%d msg/s)", o.loneRate), use, perMessage(len(ids)), liveGoals{})
	if traced {
		if marks, err := b.fetchStageTrace(ctx); err != nil {
			r.note("stage trace: %v", err)
		} else {
			r.breakdownRows(lt, fmt.Sprintf("lone | %d msg/s", o.loneBusyRate), ids, marks, ps.ids, crowdMarks)
			r.slowestRows(lt, ids, marks, 5)
		}
	}
	if o.loneFloorN > 0 {
		b.floorRows(ctx, r)
	}
	if err := b.c.pauseGroup(ctx, "bench-l"); err != nil {
		r.note("pause bench-l: %v", err)
	}
	return r
}

// firstByte returns sorted times from each publish's start to its POST reaching the
// receiver's handler, and how many ids never arrived.
func (lt *latencyRun) firstByte(ids []string) ([]time.Duration, int) {
	var out []time.Duration
	missing := 0
	for _, id := range ids {
		d, ok := lt.sk.lookup(id)
		if !ok {
			missing++
			continue
		}
		out = append(out, d.first.Sub(lt.sentAt(id)))
	}
	slices.Sort(out)
	return out, missing
}

// stageMark is one mark of Herald's stage trace (internal/stagetrace.Event).
type stageMark struct {
	Stage  string `json:"stage"`
	At     int64  `json:"at"` // Unix ns
	Queue  int64  `json:"queue"`
	Offset int64  `json:"offset"`
}

// fetchStageTrace reads and clears Herald's stage marks (GET /debug/stagetrace on the
// metrics listener); an error when Herald runs without HERALD_STAGE_TRACE.
func (b *bench) fetchStageTrace(ctx context.Context) ([]stageMark, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.metricsAddr+"/debug/stagetrace", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /debug/stagetrace: HTTP %d (is HERALD_STAGE_TRACE on?)", resp.StatusCode)
	}
	var out []stageMark
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

func (b *bench) drainStageTrace(ctx context.Context) error {
	if !b.opts.stageTrace {
		return fmt.Errorf("stage trace off")
	}
	_, err := b.fetchStageTrace(ctx)
	return err
}

// segments are the breakdown's rows: from one stage (or the publish's start, "") to
// the next (or the receipt, "").
var segments = []struct{ from, to, label, short string }{
	{"", "publish_start", "request → publish handler (HTTP, routing, auth)", "request"},
	{"publish_start", "publish_submit", "publish handler (read, validate)", "handler"},
	{"publish_submit", "flush_start", "hand-off to the group-commit writer", "hand-off"},
	{"flush_start", "flush_committed", "group-commit flush: INSERT + commit", "flush"},
	{"flush_committed", "notified", "after commit → notification", "notify"},
	{"notified", "dispatch_event", "notification → dispatcher loop", "dispatcher"},
	{"dispatch_event", "job_hand_off", "dispatch: cut the job", "cut"},
	{"job_hand_off", "worker_start", "job hand-off → worker", "job"},
	{"worker_start", "post_start", "worker: fence, group, sign", "worker"},
	{"post_start", "", "POST → receiver handler", "POST"},
}

// stageTimes gives, per segment, the sorted times of the messages ids whose every
// mark was found (the first of each stage for its queue and offset), and how many
// those were.
func stageTimes(lt *latencyRun, ids []string, marks []stageMark) ([][]time.Duration, int) {
	type msgKey struct{ q, o int64 }
	byMsg := map[msgKey]map[string]int64{}
	for _, m := range marks {
		k := msgKey{m.Queue, m.Offset}
		st := byMsg[k]
		if st == nil {
			st = map[string]int64{}
			byMsg[k] = st
		}
		if at, seen := st[m.Stage]; !seen || m.At < at {
			st[m.Stage] = m.At
		}
	}
	per := make([][]time.Duration, len(segments))
	used := 0
	for _, id := range ids {
		var k msgKey
		if _, err := fmt.Sscanf(id, "msg_%d_%d", &k.q, &k.o); err != nil {
			continue
		}
		d, ok := lt.sk.lookup(id)
		st := byMsg[k]
		if !ok || st == nil {
			continue
		}
		start, stop := lt.sentAt(id).UnixNano(), d.first.UnixNano()
		at := func(stage string, dflt int64) (int64, bool) {
			if stage == "" {
				return dflt, true
			}
			v, ok := st[stage]
			return v, ok
		}
		var row []time.Duration
		for _, s := range segments {
			a, ok1 := at(s.from, start)
			z, ok2 := at(s.to, stop)
			if !ok1 || !ok2 {
				row = nil
				break
			}
			row = append(row, time.Duration(z-a))
		}
		if row == nil {
			continue
		}
		used++
		for i, v := range row {
			per[i] = append(per[i], v)
		}
	}
	for i := range per {
		slices.Sort(per[i])
	}
	return per, used
}

// breakdownRows adds, per segment of the path, the median and p90 of two sets of
// messages side by side (named in label, "a | b"): each message's marks are found
// by its queue and offset, the segments before and after Herald by the publish's
// start and the receipt.
func (r *result) breakdownRows(lt *latencyRun, label string, aIDs []string, aMarks []stageMark, bIDs []string, bMarks []stageMark) {
	a, aUsed := stageTimes(lt, aIDs, aMarks)
	b, bUsed := stageTimes(lt, bIDs, bMarks)
	if aUsed == 0 && bUsed == 0 {
		r.note("stage trace: no message had every mark (%d and %d marks)", len(aMarks), len(bMarks))
		return
	}
	cell := func(per []time.Duration) string {
		if len(per) == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f / %.2f", float64(pct(per, 0.5))/1e6, float64(pct(per, 0.9))/1e6)
	}
	var aSum, bSum time.Duration
	for i, s := range segments {
		if len(a[i]) > 0 {
			aSum += pct(a[i], 0.5)
		}
		if len(b[i]) > 0 {
			bSum += pct(b[i], 0.5)
		}
		r.info("breakdown: "+s.label+", median / p90 ms ("+label+")", cell(a[i])+" | "+cell(b[i]))
	}
	r.info("breakdown: sum of medians ("+label+")", fmt.Sprintf("%s (%d of %d traced) | %s (%d of %d traced)",
		ms(aSum), aUsed, len(aIDs), ms(bSum), bUsed, len(bIDs)))
}

// slowestRows adds the n slowest traced lone messages, each broken down by segment
// (ms), with the time of its publish: the tail's stage and what it met.
func (r *result) slowestRows(lt *latencyRun, ids []string, marks []stageMark, n int) {
	type slow struct {
		id    string
		total time.Duration
		row   []time.Duration
	}
	var all []slow
	for _, id := range ids {
		per, used := stageTimes(lt, []string{id}, marks)
		if used == 0 {
			continue
		}
		s := slow{id: id}
		for _, p := range per {
			s.row = append(s.row, p[0])
			s.total += p[0]
		}
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b slow) int { return cmp.Compare(b.total, a.total) })
	for i, s := range all[:min(n, len(all))] {
		var parts []string
		for j, d := range s.row {
			if d >= 200*time.Microsecond {
				parts = append(parts, fmt.Sprintf("%s %.2f", segments[j].short, float64(d)/1e6))
			}
		}
		r.info(fmt.Sprintf("slowest lone #%d: %s at %s", i+1, s.id, lt.sentAt(s.id).UTC().Format("15:04:05.000")),
			fmt.Sprintf("%.2f ms: %s", float64(s.total)/1e6, strings.Join(parts, ", ")))
	}
}

// floorRows measures the stand-in (standin.go) on this machine in this run: the same
// publisher, receiver and MariaDB, with and without one INSERT, lone at the lone rate
// and back to back. It bounds from below what Herald's lone path can reach here.
func (b *bench) floorRows(ctx context.Context, r *result) {
	o := b.opts
	si, err := startStandIn(b.opts.dsn)
	if err != nil {
		r.note("floor stand-in: %v", err)
		return
	}
	defer si.stop()
	sk, hook := b.rcv.newSink("l-floor")
	cell := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f / %.2f / %.2f", float64(pct(ds, 0.5))/1e6, float64(pct(ds, 0.9))/1e6, float64(pct(ds, 0.99))/1e6)
	}
	// Warm both paths first: connections, the tables' pages.
	for _, db := range []bool{false, true} {
		if _, err := si.series(ctx, sk, hook, db, 20, 0); err != nil {
			r.note("floor stand-in warm-up: %v", err)
			return
		}
	}
	for _, db := range []bool{false, true} {
		name := "Go HTTP → handler → POST, no storage"
		if db {
			name = "Go HTTP → handler → one autocommit INSERT (1 KiB, queue-shaped) → POST"
		}
		lone, err := si.series(ctx, sk, hook, db, o.loneFloorN, time.Second/time.Duration(o.loneRate))
		if err != nil {
			r.note("floor stand-in: %v", err)
			return
		}
		b2b, err := si.series(ctx, sk, hook, db, 4*o.loneFloorN, 0)
		if err != nil {
			r.note("floor stand-in: %v", err)
			return
		}
		r.info(fmt.Sprintf("floor: %s, p50 / p90 / p99 ms (lone at %d msg/s | back to back)", name, o.loneRate), cell(lone.e2e)+" | "+cell(b2b.e2e))
		if db {
			r.info("floor: that INSERT alone, p50 / p90 / p99 ms (lone | back to back)", cell(lone.insert)+" | "+cell(b2b.insert))
		}
	}
}
