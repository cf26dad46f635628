package dispatcher

import (
	"context"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// jobQueue is where the dispatcher meets asynq: it enqueues delivery jobs and asks
// whether a job past its deadline still waits unstarted. asynqQueue is the only
// production implementation; unit tests of the cut record jobs through their own.
type jobQueue interface {
	// EnqueueContext enqueues task; asynq.ErrTaskIDConflict means it already is.
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
	// GetTaskInfo returns the task id in queue, or asynq.ErrTaskNotFound.
	GetTaskInfo(queue, id string) (*asynq.TaskInfo, error)
	// Close releases the Redis connections.
	Close() error
}

// asynqQueue is the jobQueue on asynq's client and inspector.
type asynqQueue struct {
	client    *asynq.Client
	inspector *asynq.Inspector
}

func newAsynqQueue(opt asynq.RedisConnOpt) *asynqQueue {
	return &asynqQueue{client: asynq.NewClient(opt), inspector: asynq.NewInspector(opt)}
}

func (q *asynqQueue) EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	return q.client.EnqueueContext(ctx, task, opts...)
}

func (q *asynqQueue) GetTaskInfo(queue, id string) (*asynq.TaskInfo, error) {
	return q.inspector.GetTaskInfo(queue, id)
}

func (q *asynqQueue) Close() error {
	ierr := q.inspector.Close()
	if err := q.client.Close(); err != nil {
		return err
	}
	return ierr
}

// scheduleStore is the part of the store the cut, retry claims and commits use, so
// scheduling can be unit-tested without MySQL. *store.Store is the only production
// implementation; see its methods for the contracts.
type scheduleStore interface {
	RetryClaim(ctx context.Context, groupID int64, token string, lease time.Duration, limit int) ([]models.RetryMessage, error)
	RetryNextDue(ctx context.Context, groupID int64) (time.Time, error)
	RetryRelease(ctx context.Context, groupID, queueID int64, offsets []int64, delay time.Duration) error
	RetryRecord(ctx context.Context, groupID int64, maxAttempts int, schedule []int, fails []store.Failure) (store.FailureOutcome, error)
	CursorsCommit(ctx context.Context, owner string, commits []store.CursorCommit) (lost []int64, err error)
}

var (
	_ jobQueue      = (*asynqQueue)(nil)
	_ scheduleStore = (*store.Store)(nil)
)
