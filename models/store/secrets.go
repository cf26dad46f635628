package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/heraldhq/herald/internal/secrets"
)

// UseKeyring makes the Store seal signing secrets with k when it writes them and open
// them when it reads them (AES-256-GCM at rest). Call it once, before the Store is shared; a nil
// or empty Keyring stores plaintext. Plaintext rows written before encryption was
// enabled are read as they are and resealed by GroupSecretsReseal.
func (s *Store) UseKeyring(k *secrets.Keyring) { s.keys = k }

// GroupSecretsReseal rewrites every group secret (signing secrets and endpoint
// credentials), every push key and every db node DSN that is not sealed under the
// primary key (plaintext rows, or rows sealed under an older key), and returns how
// many rows changed. Each row is updated only if it still holds what was read, so
// concurrent rotations win. It returns an error wrapping secrets.ErrUnknownKey when a row names
// a key the Keyring lacks.
func (s *Store) GroupSecretsReseal(ctx context.Context) (int, error) {
	if !s.keys.Enabled() {
		return 0, nil
	}
	var rows []groupRow
	if err := s.db.WithContext(ctx).Select("id", "signing_secret", "previous_signing_secret", "endpoint_auth").Find(&rows).Error; err != nil {
		return 0, fmt.Errorf("read group secrets: %w", err)
	}
	n := 0
	for _, r := range rows {
		if r.EndpointAuth != nil && !s.keys.Current(*r.EndpointAuth) {
			plain, err := s.keys.Open(*r.EndpointAuth)
			if err != nil {
				return n, fmt.Errorf("group %d endpoint auth: %w", r.ID, err)
			}
			res := s.db.WithContext(ctx).Model(&groupRow{}).Where("id = ? AND endpoint_auth = ?", r.ID, *r.EndpointAuth).Update("endpoint_auth", s.keys.Seal(plain))
			if res.Error != nil {
				return n, fmt.Errorf("reseal endpoint auth of group %d: %w", r.ID, res.Error)
			}
			n += int(res.RowsAffected)
		}
		if s.keys.Current(r.SigningSecret) && s.keys.Current(r.PreviousSigningSecret) {
			continue
		}
		cur, err := s.keys.Open(r.SigningSecret)
		if err != nil {
			return n, fmt.Errorf("group %d: %w", r.ID, err)
		}
		prev, err := s.keys.Open(r.PreviousSigningSecret)
		if err != nil {
			return n, fmt.Errorf("group %d: %w", r.ID, err)
		}
		res := s.db.WithContext(ctx).Model(&groupRow{}).
			Where("id = ? AND signing_secret = ? AND previous_signing_secret = ?", r.ID, r.SigningSecret, r.PreviousSigningSecret).
			Updates(map[string]any{"signing_secret": s.keys.Seal(cur), "previous_signing_secret": s.keys.Seal(prev)})
		if res.Error != nil {
			return n, fmt.Errorf("reseal group %d: %w", r.ID, res.Error)
		}
		n += int(res.RowsAffected)
	}
	pk, err := s.pushKeysReseal(ctx)
	if err != nil {
		return n + pk, err
	}
	nd, err := s.nodeDSNsReseal(ctx)
	return n + pk + nd, err
}

// pushKeysReseal reseals push keys not sealed under the primary key.
func (s *Store) pushKeysReseal(ctx context.Context) (int, error) {
	type keyRow struct {
		Kid        string
		PrivateKey string
	}
	var rows []keyRow
	if err := s.db.WithContext(ctx).Raw("SELECT kid, private_key FROM push_keys").Scan(&rows).Error; err != nil {
		return 0, fmt.Errorf("read push keys: %w", err)
	}
	n := 0
	for _, r := range rows {
		if s.keys.Current(r.PrivateKey) {
			continue
		}
		plain, err := s.keys.Open(r.PrivateKey)
		if err != nil {
			return n, fmt.Errorf("push key %s: %w", r.Kid, err)
		}
		res := s.db.WithContext(ctx).Exec("UPDATE push_keys SET private_key = ? WHERE kid = ? AND private_key = ?", s.keys.Seal(plain), r.Kid, r.PrivateKey)
		if res.Error != nil {
			return n, fmt.Errorf("reseal push key %s: %w", r.Kid, res.Error)
		}
		n += int(res.RowsAffected)
	}
	return n, nil
}

// GroupRotateSecret makes secret the group's signing secret; the old one becomes the
// previous secret and keeps signing until expiresAt (UTC, ms), as Svix's rotation.
// A rotation inside an open window drops the older previous secret. It bumps the
// config version and returns ErrNotFound for an unknown group.
func (s *Store) GroupRotateSecret(ctx context.Context, id int64, secret string, expiresAt time.Time) error {
	return s.WithTx(ctx, func(tx *Store) error {
		var r groupRow
		if err := tx.db.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id", "signing_secret").Where("id = ?", id).Take(&r).Error; err != nil {
			return notFound(err, fmt.Sprintf("group %d", id))
		}
		cur, err := tx.keys.Open(r.SigningSecret)
		if err != nil {
			return fmt.Errorf("group %d: %w", id, err)
		}
		exp := expiresAt.UTC().Truncate(time.Millisecond)
		err = tx.db.Model(&groupRow{}).Where("id = ?", id).Updates(map[string]any{
			"signing_secret": tx.keys.Seal(secret), "previous_signing_secret": tx.keys.Seal(cur),
			"previous_secret_expires_at": exp, "config_version": gorm.Expr("config_version + 1"), "updated_at": time.Now().UTC(),
		}).Error
		if err != nil {
			return fmt.Errorf("rotate secret of group %d: %w", id, err)
		}
		return nil
	})
}

// nodeDSNsReseal reseals db node DSNs not sealed under the primary key.
func (s *Store) nodeDSNsReseal(ctx context.Context) (int, error) {
	var rows []nodeRow
	if err := s.db.WithContext(ctx).Where("dsn_enc IS NOT NULL").Find(&rows).Error; err != nil {
		return 0, fmt.Errorf("read node dsns: %w", err)
	}
	n := 0
	for _, r := range rows {
		if s.keys.Current(*r.DsnEnc) {
			continue
		}
		plain, err := s.keys.Open(*r.DsnEnc)
		if err != nil {
			return n, fmt.Errorf("node %d dsn: %w", r.ID, err)
		}
		res := s.db.WithContext(ctx).Exec("UPDATE db_nodes SET dsn_enc = ? WHERE id = ? AND dsn_enc = ?", s.keys.Seal(plain), r.ID, *r.DsnEnc)
		if res.Error != nil {
			return n, fmt.Errorf("reseal dsn of node %d: %w", r.ID, res.Error)
		}
		n += int(res.RowsAffected)
	}
	return n, nil
}
