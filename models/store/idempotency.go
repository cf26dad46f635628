package store

import (
	"context"
	"fmt"
)

// IdempotencyPrune deletes idempotency rows older than IdempotencyTTL (database
// time), oldest first in chunks of chunk rows (DELETE … ORDER BY created_at LIMIT,
// on idx_idempotency_created), at most maxChunks chunks (0: until done). It returns
// how many it deleted and whether none is left. A row past its TTL already answers
// nothing (IdempotencyGet) and is replaced by its key's next publish; pruning only
// bounds the table.
func (s *Store) IdempotencyPrune(ctx context.Context, chunk, maxChunks int) (deleted int64, done bool, err error) {
	stmt := "DELETE FROM idempotency_keys WHERE " + idempotencyExpired + " ORDER BY created_at LIMIT ?"
	for i := 0; maxChunks == 0 || i < maxChunks; i++ {
		if err := ctx.Err(); err != nil {
			return deleted, false, err
		}
		res, err := s.sql.ExecContext(ctx, stmt, chunk)
		if err != nil {
			return deleted, false, fmt.Errorf("prune idempotency keys: %w", err)
		}
		n, _ := res.RowsAffected()
		deleted += n
		if n < int64(chunk) {
			return deleted, true, nil
		}
	}
	return deleted, false, nil
}

// IdempotencyGet returns the stored outcome for (apiKeyID, topicID, key) if it is
// younger than IdempotencyTTL, or ErrNotFound (also for an expired row not yet
// pruned).
func (s *Store) IdempotencyGet(ctx context.Context, apiKeyID, topicID int64, key string) (*IdempotencyRecord, error) {
	rec := &IdempotencyRecord{APIKeyID: apiKeyID, TopicID: topicID, Key: key}
	err := s.sql.QueryRowContext(ctx, "SELECT request_hash, status_code, response FROM idempotency_keys WHERE api_key_id = ? AND topic_id = ? AND idem_key = ? AND NOT ("+idempotencyExpired+")",
		apiKeyID, topicID, []byte(key)).Scan(&rec.RequestHash, &rec.Status, &rec.Response)
	if err != nil {
		return nil, notFound(err, "idempotency key")
	}
	return rec, nil
}
