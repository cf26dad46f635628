package dispatcher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

// onlyJob returns the one job in flight.
func (b *cutBundle) onlyJob(t *testing.T) *jobState {
	t.Helper()
	require.Len(t, b.d.jobs, 1)
	for _, js := range b.d.jobs {
		return js
	}
	return nil
}

func pendingOffsets(cs *cursorState) []int64 {
	var out []int64
	for _, p := range cs.pending {
		out = append(out, p.offset)
	}
	return out
}

func rng(from, to int64) []delivery.Range { return delivery.Ranges(span64(from, to)) }

func span64(from, to int64) []int64 {
	var out []int64
	for o := from; o <= to; o++ {
		out = append(out, o)
	}
	return out
}

// TestApplyReport: a first-delivery job's report marks offsets done, returns offsets
// to send as their reason says, extends the job's deadline and finishes the job when
// it is final or nothing remains; a report of another cursor version is dropped.
func TestApplyReport(t *testing.T) {
	t.Parallel()
	type want struct {
		jobLive     bool          // the job is still in flight
		remaining   int           // its offsets still awaited (when live)
		pending     []int64       // the cursor's to-send set after
		notBefore   time.Duration // of every pending offset after now (when pending)
		returns     int           // of every pending offset
		refresh     bool          // a full rebalance asked
		inflightPar int           // the group's credits in use
		deadline    time.Duration // the job's deadline after now (when live)
	}
	cases := []struct {
		name   string
		report func(j delivery.Job) delivery.Report
		want   want
	}{
		{name: "all delivered, final", report: func(j delivery.Job) delivery.Report {
			return delivery.Report{Delivered: j.Offsets, Final: true}
		}, want: want{}},
		{name: "all delivered, not final: nothing remains", report: func(j delivery.Job) delivery.Report {
			return delivery.Report{Delivered: j.Offsets}
		}, want: want{}},
		{name: "progress extends the deadline", report: func(delivery.Job) delivery.Report {
			return delivery.Report{Delivered: rng(1, 2)}
		}, want: want{jobLive: true, remaining: 3, inflightPar: 5, deadline: 40 * time.Second}},
		{name: "returned at shutdown: backed off, counted", report: func(delivery.Job) delivery.Report {
			return delivery.Report{Delivered: rng(1, 3), Returned: map[delivery.Reason][]delivery.Range{delivery.ReasonShutdown: rng(4, 5)}, Final: true}
		}, want: want{pending: []int64{4, 5}, notBefore: 200 * time.Millisecond, returns: 1}},
		{name: "returned while paused: a short delay", report: func(delivery.Job) delivery.Report {
			return delivery.Report{Returned: map[delivery.Reason][]delivery.Range{delivery.ReasonPaused: rng(1, 5)}, Final: true}
		}, want: want{pending: []int64{1, 2, 3, 4, 5}, notBefore: 200 * time.Millisecond}},
		{name: "fenced: dropped, the cursor reloaded", report: func(delivery.Job) delivery.Report {
			return delivery.Report{Returned: map[delivery.Reason][]delivery.Range{delivery.ReasonFenced: rng(1, 5)}, Final: true}
		}, want: want{refresh: true}},
		{name: "another cursor version: dropped", report: func(j delivery.Job) delivery.Report {
			return delivery.Report{Delivered: j.Offsets, Version: j.Version + 1, Final: true}
		}, want: want{jobLive: true, remaining: 5, inflightPar: 5, deadline: 36 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupCut(t, 16, 10)
			b.d.cfg.ReturnBackoff = 200 * time.Millisecond
			gs := b.group(10, 1, 5)
			cs := gs.cursors[0]
			b.d.cut(context.Background())
			js := b.onlyJob(t)
			require.Equal(t, 5, js.job.Parallelism)
			require.Equal(t, 41*time.Second, js.deadline.Sub(b.now)) // 40 s + one round of 1 s POSTs
			b.now = b.now.Add(5 * time.Second)
			r := tc.report(js.job)
			r.TaskID, r.Group, r.Queue = js.job.TaskID(), js.job.Group, js.job.Queue
			if r.Version == 0 {
				r.Version = js.job.Version
			}
			b.d.applyReport(r)

			require.True(t, b.d.reported)
			require.Equal(t, tc.want.refresh, b.d.refresh)
			require.Equal(t, tc.want.inflightPar, gs.inflightP)
			require.Equal(t, tc.want.pending, pendingOffsets(cs))
			for _, p := range cs.pending {
				require.Equal(t, b.now.Add(tc.want.notBefore).UnixMilli(), p.notBefore, "offset %d", p.offset)
				require.Equal(t, tc.want.returns, p.returns, "offset %d", p.offset)
			}
			_, live := b.d.jobs[js.job.TaskID()]
			require.Equal(t, tc.want.jobLive, live)
			if !live {
				require.Empty(t, cs.inflight)
				require.Zero(t, cs.jobs)
				return
			}
			require.Len(t, js.remaining, tc.want.remaining)
			require.Len(t, cs.inflight, tc.want.remaining)
			require.Equal(t, tc.want.deadline, js.deadline.Sub(b.now))
		})
	}
}

// TestApplyReportRetryJob: a retry job's report settles its rows whatever the
// outcome; returned rows make the retry topic due at once; the job ends when nothing
// remains.
func TestApplyReportRetryJob(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		returned  bool
		delivered []delivery.Range
		live      bool
		remaining int
	}{
		{name: "all delivered", delivered: rng(1, 3)},
		{name: "partly delivered", delivered: rng(1, 1), live: true, remaining: 2},
		{name: "returned", delivered: rng(1, 1), returned: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupCut(t, 16, 10)
			gs := b.group(10, 1)
			for i := range 3 {
				b.st.retries = append(b.st.retries, models.RetryMessage{GroupID: gs.g.ID, QueueID: 1, Offset: int64(1 + i), Attempt: 2})
			}
			b.d.cut(context.Background())
			js := b.onlyJob(t)
			require.True(t, js.job.Retry)
			b.now = b.now.Add(time.Second)
			gs.health.nextRetry = b.now.Add(time.Hour)
			r := delivery.Report{TaskID: js.job.TaskID(), Group: gs.g.ID, Queue: 1, Retry: true, Delivered: tc.delivered}
			if tc.returned {
				r.Returned = map[delivery.Reason][]delivery.Range{delivery.ReasonShutdown: rng(2, 3)}
			}
			b.d.applyReport(r)
			_, live := b.d.jobs[js.job.TaskID()]
			require.Equal(t, tc.live, live)
			if live {
				require.Len(t, js.remaining, tc.remaining)
				require.Equal(t, js.job.Parallelism, gs.inflightP)
			} else {
				require.Zero(t, gs.inflightP)
			}
			if tc.returned {
				require.True(t, b.now.Equal(gs.health.nextRetry), "next retry %v", gs.health.nextRetry)
			}
		})
	}
}

// TestApplyReportUnknown: a report of a group this dispatcher does not own changes
// nothing; one of a job no longer tracked still marks its delivered offsets done.
func TestApplyReportUnknown(t *testing.T) {
	t.Parallel()
	b := setupCut(t, 16, 10)
	gs := b.group(10, 1, 5)
	cs := gs.cursors[0]
	b.d.applyReport(delivery.Report{TaskID: "x", Group: 99, Queue: 1, Version: 1, Delivered: rng(1, 5)})
	require.Len(t, cs.pending, 5)
	cs.pending = nil // read and given to a job that is gone (a previous run)
	b.d.applyReport(delivery.Report{TaskID: "gone", Group: gs.g.ID, Queue: 1, Version: cs.version, Delivered: rng(1, 5)})
	off, _ := cs.commitPoint()
	require.EqualValues(t, 5, off)
}
