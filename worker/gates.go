package worker

import (
	"context"
	"errors"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

// A job passes a list of gates before its first POST (jobGates) and a shorter one
// before each POST (postGates), in order, as a chain of handler middleware does
// (watermill's). A gate that closes names the reason the messages go back to their
// dispatcher; the first to close decides.

// jobStart is what the start gates learn of a job: its offsets, then its group and
// its messages as the gates load them.
type jobStart struct {
	job     delivery.Job
	offsets []int64
	rep     *reporter
	g       *cachedGroup
	msgs    []models.Message
}

// jobGate is one check at a job's start; it returns the reason the job sends
// nothing, or "" to go on.
type jobGate func(ctx context.Context, w *Worker, s *jobStart) delivery.Reason

// jobGates are the checks at a job's start: the worker is not stopping; the job's
// cursor version still holds (one HGET per first-delivery job; a retry job's group
// is not retired); its group exists and loads; the group is not paused; its
// messages are carried or load (missing ones count as done only when retention
// pruned them, else they go back: settleMissing).
var jobGates = []jobGate{gateStopping, gateFence, gateGroup, gatePaused, gateMessages}

// startGates runs jobGates on s and returns the first reason one gave, or "".
func (w *Worker) startGates(ctx context.Context, s *jobStart) delivery.Reason {
	for _, gate := range jobGates {
		if reason := gate(ctx, w, s); reason != "" {
			return reason
		}
	}
	return ""
}

func gateStopping(_ context.Context, w *Worker, _ *jobStart) delivery.Reason {
	if w.isStopping() {
		return delivery.ReasonShutdown
	}
	return ""
}

func gateFence(ctx context.Context, w *Worker, s *jobStart) delivery.Reason {
	j := s.job
	if j.Retry {
		if w.fences.Retired(j.Group, j.Queue) {
			return delivery.ReasonFenced // the group was deleted
		}
		return ""
	}
	// A reset or takeover since the job was cut fences it.
	stale, err := w.fences.Load(ctx, j.Group, j.Queue, j.Version)
	if err != nil {
		w.log.Warn("read cursor fence; sending the job", "task", s.rep.taskID, "err", err)
	}
	if stale {
		return delivery.ReasonFenced
	}
	return ""
}

func gateGroup(ctx context.Context, w *Worker, s *jobStart) delivery.Reason {
	g, err := w.group(ctx, s.job.Group)
	if errors.Is(err, models.ErrNotFound) {
		// Deleted: nothing is sent; the returned messages have no cursor left to go to.
		return delivery.ReasonFenced
	}
	if err != nil {
		w.log.Warn("load group for job", "group", s.job.Group, "err", err)
		return delivery.ReasonLoadFailed
	}
	s.g = g
	return ""
}

func gatePaused(_ context.Context, w *Worker, s *jobStart) delivery.Reason {
	if w.paused(s.g) {
		return delivery.ReasonPaused
	}
	return ""
}

func gateMessages(ctx context.Context, w *Worker, s *jobStart) delivery.Reason {
	j := s.job
	msgs := j.Carried(s.offsets)
	if msgs == nil {
		var err error
		if msgs, err = w.st.MessagesGet(ctx, j.Queue, s.offsets); err != nil {
			w.log.Warn("load messages for job", "group", j.Group, "queue", j.Queue, "err", err)
			return delivery.ReasonLoadFailed
		}
	}
	if len(msgs) != len(s.offsets) {
		found := make(map[int64]bool, len(msgs))
		for _, m := range msgs {
			found[m.Offset] = true
		}
		var missing []int64
		for _, o := range s.offsets {
			if !found[o] {
				missing = append(missing, o)
			}
		}
		w.settleMissing(ctx, j.Queue, missing, s.rep)
	}
	s.msgs = msgs
	return ""
}

// settleMissing reports the offsets of queue a job found no row for: those
// retention pruned (at or below the queue's pruned_through) are done; any other is
// not visible yet (a commit still to be finished, a node behind) and goes back to
// be sent later, never counted as done.
func (w *Worker) settleMissing(ctx context.Context, queue int64, missing []int64, rep *reporter) {
	through, err := w.st.QueuePrunedThrough(ctx, queue)
	if err != nil {
		w.log.Warn("read pruned offset; the missing messages go back", "queue", queue, "err", err)
		through = 0
	}
	var pruned, unseen []int64
	for _, o := range missing {
		if o <= through {
			pruned = append(pruned, o)
		} else {
			unseen = append(unseen, o)
		}
	}
	if len(pruned) > 0 {
		w.log.Warn("messages pruned by retention before delivery; counted as done", "queue", queue, "count", len(pruned))
		rep.delivered(pruned, delivery.Counters{})
	}
	if len(unseen) > 0 {
		w.log.Warn("messages not found in their queue table; sent back to be tried later", "queue", queue, "count", len(unseen), "first", unseen[0])
		rep.returned(delivery.ReasonLoadFailed, unseen, delivery.Counters{})
	}
}

// postGate is one check before a POST of run; it returns the reason the POST's
// messages go back, or "" to go on.
type postGate func(ctx context.Context, r *jobRun) delivery.Reason

// postGates are the checks before each POST, none of them a Redis command: the
// worker is not stopping and its lease holds (a worker stopped long enough for
// dispatchers to send the job elsewhere sends nothing more); the job's fence and
// the group's status as announced; and no earlier POST of the job stopped it.
var postGates = []postGate{postStopping, postFence, postStopped}

// sendGates runs postGates for r and returns the first reason one gave, or "".
func (r *jobRun) sendGates(ctx context.Context) delivery.Reason {
	for _, gate := range postGates {
		if reason := gate(ctx, r); reason != "" {
			return reason
		}
	}
	return ""
}

func postStopping(ctx context.Context, r *jobRun) delivery.Reason {
	if ctx.Err() != nil || r.w.isStopping() || bus.Lapsed(ctx) {
		return delivery.ReasonShutdown
	}
	return ""
}

// postFence stops the whole job (jobRun.stop), not only this POST, when the job's
// fence or the group's pause is announced.
func postFence(_ context.Context, r *jobRun) delivery.Reason {
	j := r.job
	if (!j.Retry && r.w.fences.Stale(j.Group, j.Queue, j.Version)) || r.w.fences.Retired(j.Group, j.Queue) {
		r.stop.Store(string(delivery.ReasonFenced))
	} else if r.w.paused(r.g) {
		r.stop.Store(string(delivery.ReasonPaused)) // a pause answered: no POST starts after it
	}
	return ""
}

func postStopped(_ context.Context, r *jobRun) delivery.Reason {
	return r.stopReason()
}
