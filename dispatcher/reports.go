package dispatcher

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/worker/task"
)

// popReports moves reports from this dispatcher's Redis list to the loop.
func (d *Dispatcher) popReports(ctx context.Context, out chan<- task.Report) error {
	key := task.ReportsKey(d.namespace, d.id)
	blmpop := true // Redis ≥ 7 pops up to 256 reports in one blocking call
	for ctx.Err() == nil {
		var vals []string
		var err error
		if blmpop {
			_, vals, err = d.rdb.BLMPop(ctx, time.Second, "left", 256, key).Result()
			if err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
				blmpop = false
				continue
			}
		} else {
			var res []string
			res, err = d.rdb.BLPop(ctx, time.Second, key).Result()
			if err == nil {
				vals = []string{res[1]}
				if more, err := d.rdb.LPopCount(ctx, key, 255).Result(); err == nil {
					vals = append(vals, more...)
				}
			}
		}
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, redis.Nil) {
				d.log.Warn("pop reports", "err", err)
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		for _, v := range vals {
			var r task.Report
			if err := json.Unmarshal([]byte(v), &r); err != nil {
				d.log.Warn("drop malformed report", "err", err)
				continue
			}
			select {
			case out <- r:
			case <-ctx.Done():
				return nil
			}
		}
	}
	return nil
}

// returnBackoff is the delay before a message returned after a failed POST is sent
// again: ReturnBackoff doubling per return, at most 30 s. The retry topic (next
// issue) replaces this interim rule.
func (d *Dispatcher) returnBackoff(returns int) time.Duration {
	b := d.cfg.ReturnBackoff << min(returns, 10)
	return min(b, 30*time.Second)
}

// applyReport marks delivered offsets done (final and idempotent, whatever job or
// generation reported them) and puts returned ones back to send, if the report is
// from the job that currently holds them. Reports of another cursor version are dropped.
func (d *Dispatcher) applyReport(r task.Report) {
	cs := d.byGQ[[2]int64{r.Group, r.Queue}]
	if cs == nil || cs.version != r.Version {
		return
	}
	for _, off := range task.Expand(r.Delivered) {
		cs.markDone(off)
	}
	js := d.jobs[r.TaskID]
	if r.Counters.LastError != "" {
		cs.group.lastError = r.Counters.LastError
	}
	if js != nil {
		nowMS := d.now().UnixMilli()
		for reason, rs := range r.Returned {
			for _, off := range task.Expand(rs) {
				inf, ok := cs.inflight[off]
				if !ok || inf.job != js {
					continue
				}
				delete(cs.inflight, off)
				delete(js.remaining, off)
				p := pendingMsg{offset: off, createdAt: inf.createdAt, returns: inf.returns}
				if reason == task.ReasonFailed {
					p.returns++
					p.notBefore = nowMS + d.returnBackoff(inf.returns).Milliseconds()
					d.wakeBy(time.UnixMilli(p.notBefore))
				}
				cs.pending = append(cs.pending, p)
			}
		}
		// A progress report proves the job alive: push its deadline out.
		if ext := d.now().Add(d.cfg.JobDeadlineBase); js.deadline.Before(ext) {
			js.deadline = ext
		}
		if r.Final || len(js.remaining) == 0 {
			d.finishJob(js, time.Second)
		}
	}
}
