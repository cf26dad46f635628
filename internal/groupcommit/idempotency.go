package groupcommit

import (
	"context"

	"github.com/heraldhq/herald/models/store"
)

// The publish request types, named here so that the data plane in api submits
// through the writer without importing models/store.
type (
	// PublishRequest is one publish request's messages for one topic (store.PublishRequest).
	PublishRequest = store.PublishRequest
	// IdempotencyRecord is a stored Idempotency-Key and the response it answered
	// (store.IdempotencyRecord).
	IdempotencyRecord = store.IdempotencyRecord
)

// IdempotencyGet returns the stored record of an earlier publish with key by the API
// key apiKeyID to topicID, for a replay. Errors: models.ErrNotFound when there is
// none (or it expired).
func (w *Writer) IdempotencyGet(ctx context.Context, apiKeyID, topicID int64, key string) (*IdempotencyRecord, error) {
	return w.st.IdempotencyGet(ctx, apiKeyID, topicID, key)
}
