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
func (s *Store) APIKeyCreate(ctx context.Context, k *models.APIKey) error {
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
func (s *Store) APIKeyGetByPrefix(ctx context.Context, prefix string) (*models.APIKey, error) {
	var r apiKeyRow
	if err := s.db.WithContext(ctx).Where("prefix = ?", prefix).Take(&r).Error; err != nil {
		return nil, notFound(err, "api key")
	}
	k := &models.APIKey{ID: r.ID, Name: r.Name, Prefix: r.Prefix, Hash: r.KeyHash, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt, RevokedAt: r.RevokedAt}
	_ = json.Unmarshal(r.Topics, &k.Topics)
	return k, nil
}

// APIKeyTouch records that key id was used now (called at most once per cache period).
func (s *Store) APIKeyTouch(ctx context.Context, id int64) error {
	_, err := s.sql.ExecContext(ctx, "UPDATE api_keys SET last_used_at = NOW(3) WHERE id = ?", id)
	return err
}
