package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldhq/herald/models"
)

type userRow struct {
	ID           int64 `gorm:"primaryKey"`
	Username     string
	PasswordHash string
	Role         string
	TokenVersion int64
	CreatedAt    time.Time
}

func (userRow) TableName() string { return "users" }

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

// UserCreate stores u (PasswordHash already bcrypt) and fills its ID. ErrConflict for a
// taken username; a *models.ValidationError (pointer /username) for a name
// models.ValidUsername refuses, whichever path (API, console, CLI, bootstrap) it came by.
func (s *Store) UserCreate(ctx context.Context, u *models.User) error {
	if !models.ValidUsername(u.Username) {
		return &models.ValidationError{Errors: []models.FieldError{{Pointer: "/username", Detail: usernameRule}}}
	}
	r := userRow{Username: u.Username, PasswordHash: u.PasswordHash, Role: string(u.Role), TokenVersion: 1, CreatedAt: time.Now().UTC()}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		if isDuplicate(err) {
			return fmt.Errorf("user %q: %w", u.Username, models.ErrConflict)
		}
		return fmt.Errorf("insert user: %w", err)
	}
	u.ID, u.TokenVersion, u.CreatedAt = r.ID, 1, r.CreatedAt
	return nil
}

// usernameRule is the detail of a refused username.
const usernameRule = "usernames are 1 to 120 bytes of UTF-8 without control characters or leading or trailing spaces"

// UserGetByUsername returns the user or ErrNotFound. Names compare byte for byte
// (no padding, no case folding).
func (s *Store) UserGetByUsername(ctx context.Context, name string) (*models.User, error) {
	return s.userGet(ctx, "username = ?", name)
}

// UserGetByID returns the user or ErrNotFound.
func (s *Store) UserGetByID(ctx context.Context, id int64) (*models.User, error) {
	return s.userGet(ctx, "id = ?", id)
}

func (s *Store) userGet(ctx context.Context, where string, arg any) (*models.User, error) {
	var r userRow
	if err := s.db.WithContext(ctx).Where(where, arg).Take(&r).Error; err != nil {
		return nil, notFound(err, "user")
	}
	return &models.User{ID: r.ID, Username: r.Username, PasswordHash: r.PasswordHash, Role: models.Role(r.Role), TokenVersion: r.TokenVersion, CreatedAt: r.CreatedAt}, nil
}

// UserCount returns how many users exist (0 triggers the bootstrap admin).
func (s *Store) UserCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&userRow{}).Count(&n).Error
	return n, err
}

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
// A prefix that models.ValidKeyPrefix refuses is not found without a query.
func (s *Store) APIKeyGetByPrefix(ctx context.Context, prefix string) (*models.APIKey, error) {
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
func (s *Store) APIKeyTouch(ctx context.Context, id int64) error {
	_, err := s.sql.ExecContext(ctx, "UPDATE api_keys SET last_used_at = NOW(3) WHERE id = ?", id)
	return err
}

// AuditRecord appends one entry to the append-only audit log.
func (s *Store) AuditRecord(ctx context.Context, actor, action, subject, sourceIP string, before, after any) error {
	var b, a []byte
	if before != nil {
		b, _ = json.Marshal(before)
	}
	if after != nil {
		a, _ = json.Marshal(after)
	}
	_, err := s.sql.ExecContext(ctx, "INSERT INTO audit_log (actor, action, subject, source_ip, before_json, after_json, created_at) VALUES (?,?,?,?,?,?,NOW(3))",
		actor, action, subject, sourceIP, b, a)
	return err
}
