package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldhq/herald/models"
)

type apiKeyRow struct {
	ID         int64 `gorm:"primaryKey"`
	Name       string
	Prefix     string
	KeyHash    []byte
	Topics     []byte
	CreatedBy  *int64
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

func (apiKeyRow) TableName() string { return "api_keys" }

// APIKeyCreate stores k (Hash is SHA-256 of the whole key) and fills its ID.
func (s *Accounts) APIKeyCreate(ctx context.Context, k *models.APIKey) error {
	topics, _ := json.Marshal(k.Topics)
	r := apiKeyRow{Name: k.Name, Prefix: k.Prefix, KeyHash: k.Hash, Topics: topics, CreatedAt: time.Now().UTC()}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		if isDuplicate(err) {
			return fmt.Errorf("api key prefix: %w", models.ErrConflict)
		}
		return fmt.Errorf("insert api key: %w", err)
	}
	k.ID, k.CreatedAt = r.ID, r.CreatedAt
	return nil
}

// APIKeyGetByPrefix returns the key with prefix (revoked ones included), or ErrNotFound.
// A prefix that models.ValidKeyPrefix refuses is not found without a query.
func (s *Accounts) APIKeyGetByPrefix(ctx context.Context, prefix string) (*models.APIKey, error) {
	if !models.ValidKeyPrefix(prefix) {
		return nil, fmt.Errorf("api key: %w", models.ErrNotFound)
	}
	var r apiKeyRow
	if err := s.db.WithContext(ctx).Where("prefix = ?", prefix).Take(&r).Error; err != nil {
		return nil, notFound(err, "api key")
	}
	k := &models.APIKey{ID: r.ID, Name: r.Name, Prefix: r.Prefix, Hash: r.KeyHash, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt, RevokedAt: r.RevokedAt}
	_ = json.Unmarshal(r.Topics, &k.Topics)
	return k, nil
}

// APIKeyTouch records that key id was used now (called at most once per cache period).
func (s *Accounts) APIKeyTouch(ctx context.Context, id int64) error {
	_, err := s.sql.ExecContext(ctx, "UPDATE api_keys SET last_used_at = NOW(3) WHERE id = ?", id)
	return err
}

// APIKeyList returns up to limit API keys with id > after, ordered by id, revoked
// ones included (RevokedAt set).
func (s *Accounts) APIKeyList(ctx context.Context, after int64, limit int) ([]*models.APIKey, error) {
	var rows []apiKeyRow
	if err := s.db.WithContext(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	out := make([]*models.APIKey, len(rows))
	for i, r := range rows {
		k := &models.APIKey{ID: r.ID, Name: r.Name, Prefix: r.Prefix, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt, RevokedAt: r.RevokedAt}
		_ = json.Unmarshal(r.Topics, &k.Topics)
		out[i] = k
	}
	return out, nil
}

// APIKeyRevoke marks key id revoked now and returns it. Revoking twice keeps the first
// time. Every api instance refuses the key once its ≤5 s cache expires.
// ErrNotFound for an unknown id.
func (s *Accounts) APIKeyRevoke(ctx context.Context, id int64) (*models.APIKey, error) {
	if _, err := s.sql.ExecContext(ctx, "UPDATE api_keys SET revoked_at = NOW(3) WHERE id = ? AND revoked_at IS NULL", id); err != nil {
		return nil, fmt.Errorf("revoke api key %d: %w", id, err)
	}
	var r apiKeyRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&r).Error; err != nil {
		return nil, notFound(err, fmt.Sprintf("api key %d", id))
	}
	k := &models.APIKey{ID: r.ID, Name: r.Name, Prefix: r.Prefix, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt, RevokedAt: r.RevokedAt}
	_ = json.Unmarshal(r.Topics, &k.Topics)
	return k, nil
}
