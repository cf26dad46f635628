// Package bus is the one place the dispatcher and the workers meet at run time: the
// dispatcher hands delivery jobs to a Jobs end and learns there whether a job it
// has no report from is still held; a worker takes its jobs from one Source and
// runs each on one of its Slots. Two implementations, chosen once per process by
// app: InProcess, where the dispatcher and the worker share a process (`herald
// all`), carries jobs and reports in memory; Redis carries jobs between processes,
// pushed to a live worker with room (push_codec.go) or, failing that, as asynq
// tasks (its one durable fallback). Reports travel on each dispatcher's report
// stream (delivery.Keys.Reports) on both, which is what lets a successor replay
// them after their owner died; InProcess hands them over in memory besides.
//
// Every implementation keeps the contract its suite (contract_test.go) checks:
// every job sent runs or is refused, never silently dropped; a worker runs at most
// len(Slots) jobs at once; a job is Alive while a worker holds it or it waits for
// one, and not after its worker died; a stopping source runs no job it has not
// started and returns it instead.
package bus

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
)

// Outgoing is a job the dispatcher hands to the bus, with Timeout, how long it may
// run once a worker starts it (the dispatcher's deadline for it; asynq's task
// timeout on the Redis bus).
type Outgoing struct {
	Job     delivery.Job
	Timeout time.Duration
}

// Refusal is an outgoing job the bus could not carry, and why; the dispatcher gives
// its credits back and cuts its messages into a job again later.
type Refusal struct {
	Job delivery.Job
	Err error
}

// Jobs is the dispatcher's end of the bus. Send, Flush, Alive, Lost, Forget and
// Peers are called from the dispatcher's loop goroutine only.
type Jobs interface {
	// Send carries jobs as they are cut and returns those it could not carry; a bus
	// may hold them until Flush to carry a step's jobs together.
	Send(ctx context.Context, jobs []Outgoing) []Refusal
	// Flush carries what Send held (the Redis bus: one PUBLISH per worker, or one
	// asynq task, for a step's jobs) and returns what it could not carry. The
	// dispatcher calls it at the end of each cut and deadline check.
	Flush(ctx context.Context) []Refusal
	// Alive reports whether j, past its deadline without a final report, is still
	// held by a worker or waits for one (its deadline is then extended); false
	// means the dispatcher sends it again as its next generation.
	Alive(ctx context.Context, j delivery.Job) bool
	// Lost returns the task ids (delivery.Job.TaskID) of sent jobs whose worker
	// died since the last call; the dispatcher sends them again at once. It reads
	// Redis at most every WorkerRefresh, and only while jobs are out.
	Lost(ctx context.Context) []string
	// Forget drops what the bus keeps about a job the dispatcher no longer tracks
	// (final report, re-dispatch, released credits).
	Forget(id string)
	// Peers sets how many live dispatchers share the workers (≥ 1): each takes at
	// most its share of a worker's slots (the Redis bus's push).
	Peers(n int)
	// Attach hands the reports of owner's jobs that run in this process to
	// reports, in memory, until Detach; Redis delivers none this way.
	Attach(owner string, reports chan<- delivery.Report)
	// Detach stops the in-memory hand-over (Attach): later reports go to the
	// owner's report stream, where a successor finds them.
	Detach()
	// Open lists the jobs of group's queue that dispatcher owner sent and a worker
	// still holds, each with the POSTs it may have open: a dispatcher that took the
	// cursor from owner counts them against the group's max_in_flight until they
	// end (StillOpen). A job held FirstBeat or longer is always found (the Redis
	// bus: its heartbeat key); the in-process bus finds none, since its jobs end
	// with their process.
	Open(ctx context.Context, owner string, group, queue int64) ([]OpenJob, error)
	// StillOpen returns those of jobs (from Open) a worker still holds.
	StillOpen(ctx context.Context, jobs []OpenJob) ([]OpenJob, error)
	// Busy is how many sent jobs run or wait in this process (0 on Redis); a
	// stopping dispatcher applies their reports before its last commit.
	Busy() int
	// Close releases the bus's connections.
	Close() error
}

// Runner is the worker's side of a Source.
type Runner interface {
	// RunJob runs j on the slot the source took for it, until its final report is
	// flushed; ctx ends at the job's Timeout.
	RunJob(ctx context.Context, j delivery.Job)
	// ReturnJob reports j's messages returned unsent (delivery.ReasonShutdown): the
	// worker stopped before a slot was free for it.
	ReturnJob(j delivery.Job)
}

// Source is a worker's end of the bus: where every job it runs comes from.
type Source interface {
	// Start begins handing jobs to r, each on one of slots (taken before RunJob,
	// given back after it returns).
	Start(ctx context.Context, r Runner, slots Slots) error
	// Stop takes no more jobs, calls halt (after which r starts no POST), returns
	// the jobs waiting for a slot and waits for every job it started.
	Stop(halt func())
}
