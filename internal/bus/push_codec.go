package bus

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/wire"
)

// The push stream. Between separate processes a dispatcher pushes the jobs one step
// cut straight to a live worker: one PUBLISH (SPUBLISH on a cluster) on that
// worker's Keys.WorkerJobs channel carries them, encoded as a pack (EncodePush), in
// place of an asynq task's ≈ 20 Redis commands. Workers announce themselves in the
// Keys.Workers hash (WorkerEntry, rewritten every WorkerRefresh) and drain their
// channel at once into a queue of their own, which runs the jobs on Concurrency
// slots. PUBLISH answers how many subscribers received the message: 0 means the
// worker is gone and the dispatcher enqueues the jobs on asynq instead. A pushed
// job is tracked like any other (TaskID, generation, deadline, heartbeat, reports,
// fence); the dispatcher re-dispatches it when its worker's entry lapses
// (WorkerLapse without a rewrite: the process died) or its deadline passes without
// a heartbeat, since no asynq task can be asked about it.

// WorkerRefresh is how often a worker rewrites its entry in Keys.Workers (one HSET,
// 0.5 Redis commands per second per worker).
const WorkerRefresh = 2 * time.Second

// WorkerRetry is how soon a worker tries again after a rewrite of its entry failed
// (Redis unreachable, a cluster master failing over), and how soon a dispatcher
// reads Keys.Workers again while it skips a worker whose push failed: the two
// meet within a fraction of a second once Redis answers again, where a refresh
// each would take up to 2 × WorkerRefresh.
const WorkerRetry = 250 * time.Millisecond

// WorkerLapse is how long a worker's entry may go unchanged before dispatchers
// count the worker dead: they stop pushing to it and re-dispatch the jobs they
// pushed to it. Three refreshes, so one slow HSET does not lapse a live worker.
const WorkerLapse = 3 * WorkerRefresh

// WorkerForget is how long a lapsed entry stays in Keys.Workers before a
// dispatcher deletes it (a worker killed without removing it).
const WorkerForget = time.Minute

// WorkersTTL is the expiry a worker sets on Keys.Workers (with its first rewrite and
// every WorkersExpireEvery-th after), so the hash is gone a minute after the last
// worker stopped refreshing it, as every other Herald key without an owner is.
const WorkersTTL = WorkerForget

// WorkersExpireEvery is how many rewrites of a worker's entry share one PEXPIRE of
// Keys.Workers (every 20 s at WorkerRefresh 2 s, well inside WorkersTTL).
const WorkersExpireEvery = 10

// WorkerEntry is a worker's value in Keys.Workers, encoded "<concurrency> <seq>".
// Concurrency is how many pushed jobs it runs at once (config.Worker.Concurrency);
// Seq grows with every rewrite, so dispatchers judge liveness by whether it changed
// on their own clock, never by comparing clocks of two hosts.
type WorkerEntry struct {
	Concurrency int
	Seq         int64
}

// String is the entry's encoding in Keys.Workers.
func (e WorkerEntry) String() string {
	return strconv.Itoa(e.Concurrency) + " " + strconv.FormatInt(e.Seq, 10)
}

// ParseWorkerEntry decodes String's form; errors name the malformed value.
func ParseWorkerEntry(s string) (WorkerEntry, error) {
	c, q, ok := strings.Cut(s, " ")
	conc, err1 := strconv.Atoi(c)
	seq, err2 := strconv.ParseInt(q, 10, 64)
	if !ok || err1 != nil || err2 != nil || conc < 0 {
		return WorkerEntry{}, fmt.Errorf("parse worker entry %q", s)
	}
	return WorkerEntry{Concurrency: conc, Seq: seq}, nil
}

// pushPayload is the wire form of a push: the jobs as EncodeJob encodes them, and
// the time the worker may spend on each (ms), as an asynq task's Timeout.
type pushPayload struct {
	TimeoutMS int64             `json:"timeout_ms"`
	Jobs      []wire.RawMessage `json:"jobs"`
}

// EncodePush returns the message pushing encoded jobs (EncodeJob; at most
// MaxPackJobs and MaxPackBytes, see Packs) with timeout, the longest deadline among
// them (rounded up to whole ms).
func EncodePush(encoded [][]byte, timeout time.Duration) ([]byte, error) {
	if len(encoded) == 0 {
		return nil, fmt.Errorf("a push needs at least one job")
	}
	p := pushPayload{TimeoutMS: (timeout + time.Millisecond - 1).Milliseconds(), Jobs: make([]wire.RawMessage, len(encoded))}
	for i, b := range encoded {
		p.Jobs[i] = b
	}
	return wire.Marshal(p)
}

// ParsePush decodes a push: its jobs and timeout (at least 1 s). A job that does
// not parse is reported in errs (by position) and left out; the others run.
func ParsePush(b []byte) (jobs []delivery.Job, timeout time.Duration, errs []error) {
	var p pushPayload
	if err := wire.Unmarshal(b, &p); err != nil {
		return nil, 0, []error{fmt.Errorf("parse pushed jobs: %w", err)}
	}
	for i, raw := range p.Jobs {
		j, err := ParseDeliver(asynq.NewTask(TypeDeliver, raw))
		if err != nil {
			errs = append(errs, fmt.Errorf("pushed job %d: %w", i, err))
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs, max(time.Duration(p.TimeoutMS)*time.Millisecond, time.Second), errs
}
