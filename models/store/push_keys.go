package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"

	"github.com/heraldhq/herald/models"
)

// PushKeyEnsure stores k as the signing push key if no unretired key exists, and
// returns the current signing key (k or the one already there). Two processes racing
// may both insert; the newer signs and both are published, which verifiers accept.
func (s *Accounts) PushKeyEnsure(ctx context.Context, k models.PushKey) (models.PushKey, error) {
	cur, err := s.PushKeyCurrent(ctx)
	if err == nil {
		return cur, nil
	}
	_, err = s.sql.ExecContext(ctx, "INSERT INTO push_keys (kid, private_key, created_at) SELECT ?, ?, NOW(3) FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM push_keys WHERE retired_at IS NULL)",
		k.ID, s.keys.Seal(base64.StdEncoding.EncodeToString(k.Seed)))
	if err != nil {
		return models.PushKey{}, fmt.Errorf("insert push key: %w", err)
	}
	return s.PushKeyCurrent(ctx)
}

// PushKeyCurrent returns the newest unretired push key, or ErrNotFound.
func (s *Accounts) PushKeyCurrent(ctx context.Context) (models.PushKey, error) {
	keys, err := s.pushKeys(ctx, "retired_at IS NULL ORDER BY created_at DESC, kid LIMIT 1")
	if err != nil {
		return models.PushKey{}, err
	}
	if len(keys) == 0 {
		return models.PushKey{}, fmt.Errorf("push key: %w", models.ErrNotFound)
	}
	return keys[0], nil
}

// PushKeyPublished returns every key the JWKS lists: unretired keys and keys retired
// less than PushTokenLifetime + PushKeyCacheSlack ago (database time), newest first.
func (s *Accounts) PushKeyPublished(ctx context.Context) ([]models.PushKey, error) {
	keep := (models.PushTokenLifetime + models.PushKeyCacheSlack).Microseconds()
	return s.pushKeys(ctx, "retired_at IS NULL OR retired_at > NOW(3) - INTERVAL ? MICROSECOND ORDER BY created_at DESC, kid", keep)
}

// PushKeyRotate retires every signing key (they stay published until their tokens
// expire), stores k as the signing key and deletes keys no longer published, in one
// transaction.
func (s *Accounts) PushKeyRotate(ctx context.Context, k models.PushKey) error {
	return s.store().WithTx(ctx, func(tx *Store) error {
		keep := (models.PushTokenLifetime + models.PushKeyCacheSlack).Microseconds()
		if err := tx.db.Exec("DELETE FROM push_keys WHERE retired_at IS NOT NULL AND retired_at <= NOW(3) - INTERVAL ? MICROSECOND", keep).Error; err != nil {
			return fmt.Errorf("delete expired push keys: %w", err)
		}
		if err := tx.db.Exec("UPDATE push_keys SET retired_at = NOW(3) WHERE retired_at IS NULL").Error; err != nil {
			return fmt.Errorf("retire push keys: %w", err)
		}
		// created_at a millisecond later than any retired key's, so the order is certain.
		err := tx.db.Exec("INSERT INTO push_keys (kid, private_key, created_at) VALUES (?, ?, NOW(3) + INTERVAL 1000 MICROSECOND)",
			k.ID, tx.keys.Seal(base64.StdEncoding.EncodeToString(k.Seed))).Error
		if err != nil {
			return fmt.Errorf("insert push key: %w", err)
		}
		return nil
	})
}

func (s *Accounts) pushKeys(ctx context.Context, where string, args ...any) ([]models.PushKey, error) {
	rows, err := s.db.WithContext(ctx).Raw("SELECT kid, private_key, created_at, retired_at FROM push_keys WHERE "+where, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("read push keys: %w", err)
	}
	defer rows.Close()
	var out []models.PushKey
	for rows.Next() {
		var k models.PushKey
		var sealed string
		var retired sql.NullTime
		if err := rows.Scan(&k.ID, &sealed, &k.CreatedAt, &retired); err != nil {
			return nil, fmt.Errorf("scan push key: %w", err)
		}
		plain, err := s.keys.Open(sealed)
		if err != nil {
			return nil, fmt.Errorf("open push key %s: %w", k.ID, err)
		}
		if k.Seed, err = base64.StdEncoding.DecodeString(plain); err != nil {
			return nil, fmt.Errorf("decode push key %s: %w", k.ID, err)
		}
		if retired.Valid {
			t := retired.Time
			k.RetiredAt = &t
		}
		out = append(out, k)
	}
	return out, rows.Err()
}
