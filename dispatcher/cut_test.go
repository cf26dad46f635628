package dispatcher

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// recordBus is a bus.Jobs that keeps the jobs carried, in order, and how many
// each Flush carried (Send holds jobs until Flush, as the Redis bus does); it holds
// no job (Alive is false) unless alive names it.
type recordBus struct {
	held  []delivery.Job
	jobs  []delivery.Job
	sends []int
	err   error // refuses every job at Flush when set
	alive map[string]bool
	lost  []string // returned by the next Lost
	// open is what Open finds for any owner; StillOpen drops those ended names.
	open  []bus.OpenJob
	ended map[string]bool
}

func (q *recordBus) Open(context.Context, string, int64, int64) ([]bus.OpenJob, error) {
	return q.open, nil
}

func (q *recordBus) StillOpen(_ context.Context, jobs []bus.OpenJob) ([]bus.OpenJob, error) {
	var out []bus.OpenJob
	for _, j := range jobs {
		if !q.ended[j.Key] {
			out = append(out, j)
		}
	}
	return out, nil
}

func (q *recordBus) Send(_ context.Context, jobs []bus.Outgoing) []bus.Refusal {
	for _, o := range jobs {
		q.held = append(q.held, o.Job)
	}
	return nil
}

func (q *recordBus) Flush(context.Context) []bus.Refusal {
	held := q.held
	q.held = nil
	if len(held) == 0 {
		return nil
	}
	if q.err != nil {
		out := make([]bus.Refusal, len(held))
		for i, j := range held {
			out[i] = bus.Refusal{Job: j, Err: q.err}
		}
		return out
	}
	q.jobs = append(q.jobs, held...)
	q.sends = append(q.sends, len(held))
	return nil
}

func (q *recordBus) Alive(_ context.Context, j delivery.Job) bool { return q.alive[j.TaskID()] }

func (q *recordBus) Lost(context.Context) []string {
	l := q.lost
	q.lost = nil
	return l
}

func (q *recordBus) Forget(id string) {
	for i, j := range q.held {
		if j.TaskID() == id {
			q.held = append(q.held[:i], q.held[i+1:]...)
			return
		}
	}
}
func (q *recordBus) Peers(int)                             {}
func (q *recordBus) Attach(string, chan<- delivery.Report) {}
func (q *recordBus) Detach()                               {}
func (q *recordBus) Busy() int                             { return 0 }
func (q *recordBus) Close() error                          { return nil }

// memStore is a scheduleStore holding due retry rows in memory; commits lose the
// cursors named in lost.
type memStore struct {
	retries  []models.RetryMessage
	released []int64
	lost     []int64
	commits  []store.CursorCommit
	leases   []time.Duration // of every RetryClaim, in order
}

func (s *memStore) RetryClaim(_ context.Context, _ int64, _ string, lease time.Duration, limit int) ([]models.RetryMessage, error) {
	s.leases = append(s.leases, lease)
	n := min(limit, len(s.retries))
	rows := s.retries[:n]
	s.retries = s.retries[n:]
	return rows, nil
}

func (s *memStore) RetryNextDue(context.Context, int64) (time.Time, error) { return time.Time{}, nil }

func (s *memStore) RetryRelease(_ context.Context, _, _ int64, offsets []int64, _ time.Duration) error {
	s.released = append(s.released, offsets...)
	return nil
}

func (s *memStore) RetryRecord(context.Context, int64, int, []int, []store.Failure) (store.FailureOutcome, error) {
	return store.FailureOutcome{}, nil
}

func (s *memStore) CursorsCommit(_ context.Context, _ string, commits []store.CursorCommit) ([]int64, error) {
	s.commits = append(s.commits, commits...)
	return s.lost, nil
}

// cutBundle is a dispatcher wired to a recordBus and a memStore at a fixed time.
type cutBundle struct {
	d   *Dispatcher
	q   *recordBus
	st  *memStore
	now time.Time
}

func setupCut(t *testing.T, maxJobs, jobSize int) *cutBundle {
	t.Helper()
	b := &cutBundle{q: &recordBus{}, st: &memStore{}, now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	b.d = &Dispatcher{
		cfg: config.Dispatcher{JobSize: jobSize, MaxJobsInFlight: maxJobs, JobDeadlineBase: 40 * time.Second},
		id:  "d1", sched: b.st, bus: b.q, members: &members{id: "d1"}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: func() time.Time { return b.now },
		groups: map[int64]*groupState{}, cursors: map[int64]*cursorState{},
		byGQ: map[[2]int64]*cursorState{}, jobs: map[string]*jobState{}, reload: map[int64]bool{},
	}
	b.d.reader = newQueueReader(nil, b.d.cfg, b.d.log, b.d.now, b.d.wakeBy)
	b.d.orders = newOrders(orderBase{host: b.d, owner: b.d.id, cfg: b.d.cfg, log: b.d.log, now: b.d.now}, b.st, &b.d.events)
	b.d.health = &healthKeeper{events: &b.d.events, log: b.d.log, now: b.d.now, wakeBy: b.d.wakeBy}
	b.d.takeovers = &takeovers{held: map[*cursorState]struct{}{}, orders: b.d.orders, reader: b.d.reader, log: b.d.log, now: b.d.now, wakeBy: b.d.wakeBy,
		jobs: b.q, self: b.d.id}
	return b
}

// group adds a running group with one cursor per entry of pending, on queues 1, 2, …,
// each holding that many due messages from offset 1.
func (b *cutBundle) group(maxInFlight, batch int, pending ...int) *groupState {
	g := &models.Group{ID: int64(len(b.d.groups) + 1), Name: "g", Status: models.GroupRunning, MaxInFlight: maxInFlight, BatchSize: batch, TimeoutMS: 1000}
	gs := &groupState{g: g, pace: newPacer(0, batch, b.now)}
	for i, n := range pending {
		cs := newCursorState(models.Cursor{ID: g.ID*100 + int64(i), GroupID: g.ID, QueueID: int64(i + 1), Version: 1}, gs)
		for off := int64(1); off <= int64(n); off++ {
			cs.pending = append(cs.pending, pendingMsg{offset: off, createdAt: b.now.UnixMilli()})
		}
		cs.readPos = int64(n)
		gs.cursors = append(gs.cursors, cs)
		b.d.cursors[cs.id] = cs
		b.d.reader.byQueue[cs.queueID] = append(b.d.reader.byQueue[cs.queueID], cs)
		b.d.byGQ[[2]int64{g.ID, cs.queueID}] = cs
	}
	b.d.groups[g.ID] = gs
	return gs
}

// cutJob is what a table case expects of one enqueued job.
type cutJob struct {
	queue int64
	msgs  int
	par   int
	retry bool
}

func summary(jobs []delivery.Job) []cutJob {
	var out []cutJob
	for _, j := range jobs {
		out = append(out, cutJob{queue: j.Queue, msgs: len(delivery.Expand(j.Offsets)), par: j.Parallelism, retry: j.Retry})
	}
	return out
}

// TestCutCredits: one cut step shares a group's in-flight credits among its flows as
// share and rotation say, and never lets the jobs in flight hold more than
// max_in_flight.
func TestCutCredits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name            string
		maxJobs, size   int // per-cursor job cap and messages per job
		maxInFlight     int
		batch           int
		pending         []int
		retries         int // due retry rows on queue 1
		want            []cutJob
		wantInflightPar int
	}{
		{name: "a lone job uses every credit it can", maxJobs: 16, size: 10, maxInFlight: 10, batch: 1, pending: []int{3},
			want: []cutJob{{1, 3, 3, false}}, wantInflightPar: 3},
		{name: "one backlogged cursor takes half, then the rest", maxJobs: 16, size: 10, maxInFlight: 10, batch: 1, pending: []int{100},
			want: []cutJob{{1, 10, 5, false}, {1, 10, 5, false}}, wantInflightPar: 10},
		{name: "two backlogged cursors take turns", maxJobs: 16, size: 10, maxInFlight: 10, batch: 1, pending: []int{100, 100},
			// The third job's 2 credits carry firstWaves POSTs each while the POST time is unknown.
			want: []cutJob{{1, 10, 4, false}, {2, 10, 4, false}, {1, 2 * firstWaves, 2, false}}, wantInflightPar: 10},
		{name: "the retry topic takes its turn", maxJobs: 16, size: 10, maxInFlight: 10, batch: 1, pending: []int{100}, retries: 5,
			want: []cutJob{{1, 10, 5, false}, {1, 5, 5, true}}, wantInflightPar: 10},
		{name: "the per-cursor job cap holds", maxJobs: 1, size: 10, maxInFlight: 10, batch: 1, pending: []int{100},
			want: []cutJob{{1, 10, 5, false}}, wantInflightPar: 5},
		{name: "credits count POSTs, not messages", maxJobs: 16, size: 100, maxInFlight: 4, batch: 10, pending: []int{100},
			want: []cutJob{{1, 100, 4, false}}, wantInflightPar: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupCut(t, tc.maxJobs, tc.size)
			gs := b.group(tc.maxInFlight, tc.batch, tc.pending...)
			for i := range tc.retries {
				b.st.retries = append(b.st.retries, models.RetryMessage{GroupID: gs.g.ID, QueueID: 1, Offset: int64(1000 + i), Attempt: 2})
			}
			b.d.cut(context.Background())
			require.Equal(t, tc.want, summary(b.q.jobs))
			require.Equal(t, tc.wantInflightPar, gs.inflightP)
			require.Len(t, b.d.jobs, len(tc.want))
		})
	}
}

// TestCutGates: a paused or throttled group and an open breaker cut nothing and ask
// to be woken when they may; a half-open breaker cuts exactly one probe batch.
func TestCutGates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		prep  func(b *cutBundle, gs *groupState)
		want  []cutJob
		probe bool          // the jobs cut are probes, and a probe is in flight after
		wake  time.Duration // wakeAt after now; 0 = none asked
	}{
		// No retry row is due: the retry topic asks to be checked again in an hour.
		{name: "running", prep: func(*cutBundle, *groupState) {}, want: []cutJob{{1, 4, 2, false}, {1, 4, 2, false}}, wake: time.Hour},
		{name: "paused", prep: func(_ *cutBundle, gs *groupState) { gs.g.Status = models.GroupPaused }},
		{name: "throttled", prep: func(b *cutBundle, gs *groupState) { gs.health.throttleUntil = b.now.Add(3 * time.Second) }, wake: 3 * time.Second},
		{name: "breaker open", prep: func(b *cutBundle, gs *groupState) {
			gs.health.breaker = breaker{state: breakerOpen, openUntil: b.now.Add(2 * time.Second), cooldown: 5 * time.Second}
		}, wake: 2 * time.Second},
		{name: "breaker cool-down over: one probe batch", prep: func(b *cutBundle, gs *groupState) {
			gs.health.breaker = breaker{state: breakerOpen, openUntil: b.now, cooldown: 5 * time.Second}
		}, want: []cutJob{{1, 2, 1, false}}, probe: true},
		{name: "half-open with its probe in flight", prep: func(_ *cutBundle, gs *groupState) {
			gs.health.breaker = breaker{state: breakerHalfOpen, probing: true, cooldown: 5 * time.Second}
		}, probe: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupCut(t, 16, 4)
			gs := b.group(4, 2, 20)
			tc.prep(b, gs)
			b.d.cut(context.Background())
			b.d.cut(context.Background()) // a second step changes nothing more for a probe
			require.Equal(t, tc.want, summary(b.q.jobs))
			for _, j := range b.q.jobs {
				require.Equal(t, tc.probe, j.Probe)
			}
			require.Equal(t, tc.probe, gs.health.breaker.probing)
			if tc.wake == 0 {
				require.True(t, b.d.wakeAt.IsZero(), "wake at %v", b.d.wakeAt)
			} else {
				require.True(t, b.now.Add(tc.wake).Equal(b.d.wakeAt), "wake at %v", b.d.wakeAt)
			}
		})
	}
}

// TestCutEnqueueFails: a job the bus refuses gives its credits back and its messages
// return to the to-send set after enqueueRetry (250 ms).
func TestCutEnqueueFails(t *testing.T) {
	t.Parallel()
	b := setupCut(t, 16, 10)
	b.q.err = errors.New("redis down")
	gs := b.group(10, 1, 3)
	b.d.cut(context.Background())
	require.Empty(t, b.d.jobs)
	require.Zero(t, gs.inflightP)
	cs := gs.cursors[0]
	require.Len(t, cs.pending, 3)
	require.Empty(t, cs.inflight)
	for _, p := range cs.pending {
		require.Equal(t, b.now.Add(enqueueRetry).UnixMilli(), p.notBefore)
	}
	require.True(t, b.now.Add(enqueueRetry).Equal(b.d.wakeAt), "wake at %v", b.d.wakeAt)
}

// TestCommitDropsLostCursors: a cursor whose fence the commit lost is dropped and
// the next step reloads its group alone (no full rebalance); its jobs hold their
// credits as orphans until their final report (their POSTs may still be open).
func TestCommitDropsLostCursors(t *testing.T) {
	t.Parallel()
	b := setupCut(t, 16, 10)
	gs := b.group(10, 1, 3, 3)
	b.d.cut(context.Background())
	require.Equal(t, 6, gs.inflightP)
	for _, cs := range gs.cursors {
		cs.dirty = true
	}
	lost := gs.cursors[0]
	b.st.lost = []int64{lost.id}
	b.d.commit(context.Background())
	require.Len(t, b.st.commits, 2)
	require.False(t, b.d.refresh)
	require.Equal(t, map[int64]bool{gs.g.ID: true}, b.d.reload)
	require.NotContains(t, b.d.cursors, lost.id)
	require.Len(t, gs.cursors, 1)
	require.Equal(t, 6, gs.inflightP, "the orphan's POSTs may still be open")
	require.Len(t, b.d.jobs, 2)
	var orphan *jobState
	for _, js := range b.d.jobs {
		if js.cursor == lost {
			orphan = js
		}
	}
	require.NotNil(t, orphan)
	require.True(t, orphan.orphan)
	b.d.applyReport(delivery.Report{TaskID: orphan.job.TaskID(), Group: gs.g.ID, Queue: lost.queueID, Version: lost.version,
		Delivered: orphan.job.Offsets, Final: true})
	require.Equal(t, 3, gs.inflightP, "its final report gives the credits back")
	require.Len(t, b.d.jobs, 1)
}

// TestThrottleCountPerMessage: a message returned throttled (its POST was refused)
// counts one throttle; one held back by another POST's throttle counts none. After
// MaxThrottles-1 throttles in a row (the group's; 3 here) the next job names it in LastThrottle, so the
// worker counts its next throttle as a failed attempt; a retry row counts the same.
func TestThrottleCountPerMessage(t *testing.T) {
	t.Parallel()
	b := setupCut(t, 16, 10)
	gs := b.group(1, 1, 2)
	gs.g.MaxThrottles = 3
	cs := gs.cursors[0]
	b.d.byGQ[[2]int64{gs.g.ID, cs.queueID}] = cs
	for i := range gs.g.MaxThrottles {
		b.d.cut(context.Background())
		require.Len(t, b.q.jobs, i+1)
		j := b.q.jobs[i]
		require.Equal(t, []int64{1, 2}, delivery.Expand(j.Offsets))
		if i < gs.g.MaxThrottles-1 {
			require.Empty(t, j.LastThrottle, "throttle %d", i+1)
		} else {
			require.Equal(t, []delivery.Range{{1, 1}}, j.LastThrottle, "only the refused message is at its bound")
		}
		b.d.applyReport(delivery.Report{TaskID: j.TaskID(), Group: j.Group, Queue: j.Queue, Version: j.Version, Final: true,
			Returned: map[delivery.Reason][]delivery.Range{delivery.ReasonThrottled: {{1, 1}}, delivery.ReasonHeld: {{2, 2}}}})
		b.now = b.now.Add(time.Second)
	}

	gs.throttledRetry(3, 9)
	require.Empty(t, gs.retryLastThrottle(3, []int64{9}))
	for range gs.g.MaxThrottles - 2 {
		gs.throttledRetry(3, 9)
	}
	require.Equal(t, []delivery.Range{{9, 9}}, gs.retryLastThrottle(3, []int64{8, 9}))
	b.d.applyReport(delivery.Report{Group: gs.g.ID, Queue: 3, Retry: true, RetryWritten: []delivery.Range{{9, 9}}})
	require.Empty(t, gs.retryLastThrottle(3, []int64{9}), "a counted attempt starts the count over")
}

// TestThrottledBatchBisected: at batch size 10 the messages of a throttled POST are
// cut apart from the others, in POSTs of 10 >> throttles; the message the endpoint
// refuses is alone from its third throttle and named in LastThrottle at
// ThrottleLimit-1, while its batch-mates go in jobs of their own.
func TestThrottledBatchBisected(t *testing.T) {
	t.Parallel()
	b := setupCut(t, 16, 100)
	gs := b.group(4, 10, 20)
	cs := gs.cursors[0]
	b.d.cut(context.Background())
	require.Len(t, b.q.jobs, 1)
	first := b.q.jobs[0]
	require.Zero(t, first.Batch, "a fresh job POSTs the group's batch size")
	// The POST of offsets 1-10 was throttled; 11-20 were held back by it.
	b.d.applyReport(delivery.Report{TaskID: first.TaskID(), Group: first.Group, Queue: first.Queue, Version: first.Version, Final: true,
		Returned: map[delivery.Reason][]delivery.Range{delivery.ReasonThrottled: {{1, 10}}, delivery.ReasonHeld: {{11, 20}}}})
	limit := delivery.ThrottleLimit(gs.g.MaxThrottles, 10)
	refused := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for throttles := 1; throttles < limit; throttles++ {
		b.now = b.now.Add(time.Second)
		seen := len(b.q.jobs)
		b.d.cut(context.Background())
		var mine *delivery.Job
		for i := seen; i < len(b.q.jobs); i++ {
			j := &b.q.jobs[i]
			if slices.Contains(delivery.Expand(j.Offsets), 1) {
				mine = j
				continue
			}
			// Batch-mates and held messages: delivered.
			b.d.applyReport(delivery.Report{TaskID: j.TaskID(), Group: j.Group, Queue: j.Queue, Version: j.Version, Final: true, Delivered: j.Offsets})
		}
		require.NotNil(t, mine, "throttle %d: offset 1 is cut again", throttles)
		require.Equal(t, refused, delivery.Expand(mine.Offsets), "throttle %d: the throttled messages travel apart", throttles)
		require.Equal(t, delivery.BisectedBatch(10, throttles), mine.Batch, "throttle %d", throttles)
		if throttles < limit-1 {
			require.Empty(t, mine.LastThrottle, "throttle %d", throttles)
		} else {
			require.Equal(t, 1, mine.Batch, "alone before its throttles count")
			require.Equal(t, []delivery.Range{{1, 1}}, mine.LastThrottle)
		}
		// The first POST of the bisected job (holding offset 1) is throttled again;
		// the rest of the job is delivered.
		half, rest := refused[:mine.Batch], refused[mine.Batch:]
		b.d.applyReport(delivery.Report{TaskID: mine.TaskID(), Group: mine.Group, Queue: mine.Queue, Version: mine.Version, Final: true,
			Delivered: delivery.Ranges(rest), Returned: map[delivery.Reason][]delivery.Range{delivery.ReasonThrottled: delivery.Ranges(half)}})
		refused = half
	}
	require.Equal(t, []int64{1}, refused)
	require.Len(t, cs.pending, 1, "only the refused message is left")
}
