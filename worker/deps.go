package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// Store is what a worker reads and writes in the databases: a group's settings and
// the names of groups and queues' topics (for attempt rows and headers), a job's
// messages by offset, retry rows (written for failed messages; deleted or released
// by retry jobs), attempt rows and push-auth keys. *store.Store implements it; the
// errors are the store's (models.ErrNotFound for a group that is gone).
type Store interface {
	GroupGetByID(ctx context.Context, id int64) (*models.Group, error)
	GroupNames(ctx context.Context, ids []int64) (map[int64]string, error)
	QueueTopics(ctx context.Context) (map[int64]string, error)
	MessagesGet(ctx context.Context, queueID int64, offsets []int64) ([]models.Message, error)
	QueuePrunedThrough(ctx context.Context, queueID int64) (int64, error)
	RetryRecord(ctx context.Context, groupID int64, maxAttempts int, schedule []int, fails []store.Failure) (store.FailureOutcome, error)
	RetryDelete(ctx context.Context, groupID, queueID int64, offsets []int64) error
	RetryRelease(ctx context.Context, groupID, queueID int64, offsets []int64, delay time.Duration) error
	AttemptsInsert(ctx context.Context, as []models.DeliveryAttempt) error
	PushKeyEnsure(ctx context.Context, k models.PushKey) (models.PushKey, error)
}

// Deps are what New builds a Worker from. Config, Keys and Guard are values (Guard
// decides which endpoint addresses may be dialled); Store, Redis, Source and Log
// are required.
type Deps struct {
	Config config.Worker
	Keys   delivery.Keys
	Store  Store
	Redis  redis.UniversalClient
	Source bus.Source // the jobs' carrier (internal/bus)
	Guard  ssrf.Guard
	Log    *slog.Logger
}

// check names the first missing dependency.
func (d Deps) check() error {
	switch {
	case d.Store == nil:
		return errors.New("worker: no store")
	case d.Redis == nil:
		return errors.New("worker: no Redis client")
	case d.Source == nil:
		return errors.New("worker: no job source")
	case d.Log == nil:
		return errors.New("worker: no logger")
	case d.Config.Concurrency < 1:
		return errors.New("worker: concurrency must be at least 1")
	}
	return nil
}
