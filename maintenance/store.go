package maintenance

import (
	"context"
	"time"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// Store is what the maintenance role reads and writes in the databases: its lease,
// the live dispatchers, queues and their retention (pruning, expired cursors), queue
// moves (seal, retire), retry and dead-letter upkeep (the outbox, expiry), deleted
// groups, idempotency keys, attempt partitions, the stats series, and the db
// nodes' health (for node.down and node.up events), the delayed messages it
// moves into their topics when due, and the schedules whose ticks it fires. *store.Store
// implements it; the errors are the store's.
type Store interface {
	AttemptsPartitions(ctx context.Context, now time.Time, retention time.Duration) error
	CursorsExpire(ctx context.Context, queueID, through int64) ([]store.CursorExpired, error)
	DeadLetterOutbox(ctx context.Context, limit int) ([]int64, error)
	DeadLettersExpire(ctx context.Context, maxChunks int) (int64, error)
	DelayedCancel(ctx context.Context, id int64) error
	DelayedDue(ctx context.Context, until time.Time, limit int) ([]models.DelayedMessage, error)
	DelayedNext(ctx context.Context) (time.Time, bool, error)
	DeletedGroupsPurge(ctx context.Context, maxChunks int) (int, error)
	DispatchersLive(ctx context.Context) ([]string, error)
	EventAppend(ctx context.Context, ev models.Event) (int64, error)
	GroupLags(ctx context.Context) (map[int64]int64, error)
	GroupNames(ctx context.Context, ids []int64) (map[int64]string, error)
	IdempotencyPrune(ctx context.Context, chunk, maxChunks int) (deleted int64, done bool, err error)
	MaintenanceLeaseRelease(ctx context.Context, name, holder string) error
	MaintenanceLeaseTake(ctx context.Context, name, holder string, lease time.Duration) (bool, error)
	MessagesInsert(ctx context.Context, reqs []*store.PublishRequest) error
	NodeGet(ctx context.Context, id int64) (*models.Node, error)
	NodeIsDown(node int64) bool
	NodesHealth() map[int64]models.NodeHealth
	QueueIDs(ctx context.Context) ([]int64, error)
	QueueMovesActive(ctx context.Context) ([]models.QueueMove, error)
	QueueNode(ctx context.Context, queueID int64) (int64, error)
	QueuePrune(ctx context.Context, queueID, through int64, chunk, maxChunks int) (deleted int64, done bool, err error)
	QueueRetentionGet(ctx context.Context, queueID int64, now time.Time) (store.QueueRetention, error)
	QueueRetire(ctx context.Context, m models.QueueMove, nodeID int64) (groups []int64, retired bool, err error)
	QueueSeal(ctx context.Context, m models.QueueMove, nodeID int64) (int64, error)
	QueueTopics(ctx context.Context) (map[int64]string, error)
	ScheduleFire(ctx context.Context, sc *models.Schedule, next time.Time) (bool, error)
	ScheduleNext(ctx context.Context) (time.Time, bool, error)
	SchedulesDue(ctx context.Context, now time.Time, limit int) ([]models.Schedule, error)
	StatsPrune(ctx context.Context, now time.Time) error
	StatsSampleLag(ctx context.Context, minute time.Time, lags map[int64]int64) error
	TopicGetByID(ctx context.Context, id int64) (*models.Topic, error)
	TopicSubscriberIDs(ctx context.Context, topicID int64) ([]int64, error)
}
