package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// scenarioLoneRate is (l): the trickle a webhook user feels beside the crowd, in one
// run. One topic of 4 queues, one group (batch 1), 1 KiB bodies. First -lone-busy-rate
// (default 1,000) msg/s from -lone-busy-publishers (16) for -lone-busy-duration
// (10 s); then -lone-n (100) messages at -lone-rate (5) msg/s from one publisher, each
// alone on the path. Latency runs from just before the publish request to the
// receiver's handler being entered (the POST's head read). With Herald's stage trace
// on (-stage-trace), the lone messages' time is broken down by stage from Herald's
// own timestamps. Goals: lone median ≤ 2 ms, p99 ≤ 5 ms.
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

	// The trickle. The pause lets the crowd's last reports and commits settle.
	time.Sleep(2 * time.Second)
	traced := b.drainStageTrace(ctx) == nil
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
			r.breakdownRows(lt, ids, marks)
		}
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
	Stage string `json:"stage"`
	At    int64  `json:"at"` // Unix ns
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
var segments = []struct{ from, to, label string }{
	{"", "publish_start", "request → publish handler (HTTP, routing, auth)"},
	{"publish_start", "publish_submit", "publish handler (read, validate)"},
	{"publish_submit", "flush_start", "hand-off to the group-commit writer"},
	{"flush_start", "flush_committed", "group-commit flush: INSERT + commit"},
	{"flush_committed", "notified", "after commit → notification"},
	{"notified", "dispatch_event", "notification → dispatcher loop"},
	{"dispatch_event", "job_hand_off", "dispatch: cut the job"},
	{"job_hand_off", "worker_start", "job hand-off → worker"},
	{"worker_start", "post_start", "worker: fence, group, sign"},
	{"post_start", "", "POST → receiver handler"},
}

// breakdownRows adds, per segment of the path, the median and p90 over the lone
// messages whose every mark was found between their publish's start and receipt (a
// lone message is the only one on the path then, so those marks are its own).
func (r *result) breakdownRows(lt *latencyRun, ids []string, marks []stageMark) {
	slices.SortFunc(marks, func(a, b stageMark) int { return int(a.At - b.At) })
	per := make([][]time.Duration, len(segments))
	used := 0
	for _, id := range ids {
		d, ok := lt.sk.lookup(id)
		if !ok {
			continue
		}
		start, stop := lt.sentAt(id).UnixNano(), d.first.UnixNano()
		first := map[string]int64{}
		for _, m := range marks {
			if m.At >= start && m.At <= stop {
				if _, seen := first[m.Stage]; !seen {
					first[m.Stage] = m.At
				}
			}
		}
		at := func(stage string, dflt int64) (int64, bool) {
			if stage == "" {
				return dflt, true
			}
			v, ok := first[stage]
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
	if used == 0 {
		r.note("stage trace: no lone message had every mark between its publish and receipt (%d marks)", len(marks))
		return
	}
	var sum time.Duration
	for i, s := range segments {
		slices.Sort(per[i])
		med := pct(per[i], 0.5)
		sum += med
		r.info("breakdown: "+s.label+", median / p90", ms(med)+" / "+ms(pct(per[i], 0.9)))
	}
	r.info("breakdown: sum of medians", fmt.Sprintf("%s (%d of %d lone messages fully traced)", ms(sum), used, len(ids)))
}
