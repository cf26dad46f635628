package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

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

// UserCreate stores u (PasswordHash already bcrypt) and fills its ID. ErrConflict for a
// taken username; a *models.ValidationError (pointer /username) for a name
// models.ValidUsername refuses, whichever path (API, console, CLI, bootstrap) it came by.
func (s *Accounts) UserCreate(ctx context.Context, u *models.User) error {
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
func (s *Accounts) UserGetByUsername(ctx context.Context, name string) (*models.User, error) {
	return s.userGet(ctx, "username = ?", name)
}

// UserGetByID returns the user or ErrNotFound.
func (s *Accounts) UserGetByID(ctx context.Context, id int64) (*models.User, error) {
	return s.userGet(ctx, "id = ?", id)
}

func (s *Accounts) userGet(ctx context.Context, where string, arg any) (*models.User, error) {
	var r userRow
	if err := s.db.WithContext(ctx).Where(where, arg).Take(&r).Error; err != nil {
		return nil, notFound(err, "user")
	}
	return &models.User{ID: r.ID, Username: r.Username, PasswordHash: r.PasswordHash, Role: models.Role(r.Role), TokenVersion: r.TokenVersion, CreatedAt: r.CreatedAt}, nil
}

// UserCount returns how many users exist (0 triggers the bootstrap admin).
func (s *Accounts) UserCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&userRow{}).Count(&n).Error
	return n, err
}

// UserList returns up to limit users with id > after, ordered by id. Password hashes
// are included; callers never show them.
func (s *Accounts) UserList(ctx context.Context, after int64, limit int) ([]*models.User, error) {
	var rows []userRow
	if err := s.db.WithContext(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out := make([]*models.User, len(rows))
	for i, r := range rows {
		out[i] = &models.User{ID: r.ID, Username: r.Username, PasswordHash: r.PasswordHash, Role: models.Role(r.Role), TokenVersion: r.TokenVersion, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// UserUpdate changes a user's role and/or password hash (nil leaves it) and bumps
// token_version, so every token issued before stops working at its next request.
// It refuses with models.ErrLastAdmin when the change would leave no admin, and
// returns ErrNotFound for an unknown id.
func (s *Accounts) UserUpdate(ctx context.Context, id int64, role *models.Role, passwordHash *string) error {
	return s.store().WithTx(ctx, func(tx *Store) error {
		if err := tx.Accounts().lockAdmins(id, role == nil || *role == models.RoleAdmin); err != nil {
			return err
		}
		set := map[string]any{"token_version": gorm.Expr("token_version + 1")}
		if role != nil {
			set["role"] = string(*role)
		}
		if passwordHash != nil {
			set["password_hash"] = *passwordHash
		}
		if err := tx.db.Model(&userRow{}).Where("id = ?", id).Updates(set).Error; err != nil {
			return fmt.Errorf("update user %d: %w", id, err)
		}
		return nil
	})
}

// UserRevokeTokens bumps a user's token_version: every JWT issued before stops working.
func (s *Accounts) UserRevokeTokens(ctx context.Context, id int64) error {
	res := s.db.WithContext(ctx).Model(&userRow{}).Where("id = ?", id).Update("token_version", gorm.Expr("token_version + 1"))
	if res.Error != nil {
		return fmt.Errorf("revoke tokens of user %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("user %d: %w", id, models.ErrNotFound)
	}
	return nil
}

// UserDelete removes a user (their tokens die with the row). It refuses with
// models.ErrLastAdmin for the last admin and returns ErrNotFound for an unknown id.
func (s *Accounts) UserDelete(ctx context.Context, id int64) error {
	return s.store().WithTx(ctx, func(tx *Store) error {
		if err := tx.Accounts().lockAdmins(id, false); err != nil {
			return err
		}
		if err := tx.db.Delete(&userRow{}, id).Error; err != nil {
			return fmt.Errorf("delete user %d: %w", id, err)
		}
		return nil
	})
}

// lockAdmins locks the user rows, checks that user id exists and, unless it stays an
// admin, that another admin remains.
func (s *Accounts) lockAdmins(id int64, staysAdmin bool) error {
	var rows []userRow
	if err := s.db.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id", "role").Find(&rows).Error; err != nil {
		return fmt.Errorf("lock users: %w", err)
	}
	found, admins, isAdmin := false, 0, false
	for _, r := range rows {
		if r.Role == string(models.RoleAdmin) {
			admins++
		}
		if r.ID == id {
			found, isAdmin = true, r.Role == string(models.RoleAdmin)
		}
	}
	if !found {
		return fmt.Errorf("user %d: %w", id, models.ErrNotFound)
	}
	if isAdmin && !staysAdmin && admins <= 1 {
		return fmt.Errorf("user %d: %w", id, models.ErrLastAdmin)
	}
	return nil
}
