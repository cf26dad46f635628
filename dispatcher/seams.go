package dispatcher

import (
	"context"
	"time"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// scheduleStore is the part of the store the cut, retry claims and commits use, so
// scheduling can be unit-tested without MySQL. store.Sides is the only
// production implementation; see its methods for the contracts.
type scheduleStore interface {
	RetryClaim(ctx context.Context, groupID int64, token string, lease time.Duration, limit int) ([]models.RetryMessage, error)
	RetryNextDue(ctx context.Context, groupID int64) (time.Time, error)
	RetryRelease(ctx context.Context, groupID, queueID int64, offsets []int64, delay time.Duration) error
	RetryRecord(ctx context.Context, groupID int64, maxAttempts int, schedule []int, fails []store.Failure) (store.FailureOutcome, error)
	CursorsCommit(ctx context.Context, owner string, commits []store.CursorCommit) (lost []int64, err error)
}

var _ scheduleStore = store.Sides{}
