package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

func openStore(ctx context.Context, vals map[string]*string) (*store.Store, error) {
	cfg, err := loadConfig(vals)
	if err != nil {
		return nil, err
	}
	return store.Open(ctx, cfg.MySQLDSN)
}

// openMigratedStore is openStore for commands that need the schema up to date.
func openMigratedStore(ctx context.Context, cfg config.Config) (*store.Store, error) {
	st, err := store.Open(ctx, cfg.MySQLDSN)
	if err != nil {
		return nil, err
	}
	if err := st.CheckMigrations(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func runMigrate(ctx context.Context, args []string) error {
	fs, vals := newFlags("migrate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: herald migrate up|down|status")
	}
	st, err := openStore(ctx, vals)
	if err != nil {
		return err
	}
	defer st.Close()
	switch fs.Arg(0) {
	case "up":
		if err := st.MigrateUp(ctx); err != nil {
			return err
		}
	case "down":
		if err := st.MigrateDown(ctx); err != nil {
			return err
		}
	case "status":
	default:
		return errors.New("usage: herald migrate up|down|status")
	}
	s, err := st.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("schema version %d of %d (dirty=%v)\n", s.Current, s.Latest, s.Dirty)
	return nil
}

func runUser(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: herald user create --username U --password P [--role admin|operator|viewer]")
	}
	fs, vals := newFlags("user create")
	name := fs.String("username", "", "username")
	pw := fs.String("password", "", "password, 8 to 72 bytes")
	role := fs.String("role", "admin", "admin, operator or viewer")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *name == "" || !models.ValidRole(models.Role(*role)) {
		return errors.New("give --username and a --role of admin, operator or viewer")
	}
	cfg, err := loadConfig(vals)
	if err != nil {
		return err
	}
	st, err := openMigratedStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	hash, err := auth.HashPassword(*pw, cfg.BcryptCost)
	if err != nil {
		return err
	}
	u := &models.User{Username: *name, PasswordHash: hash, Role: models.Role(*role)}
	if err := st.UserCreate(ctx, u); err != nil {
		return err
	}
	fmt.Printf("user %s created (id %d, role %s)\n", u.Username, u.ID, u.Role)
	return nil
}

func runAPIKey(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: herald apikey create --name N --topics 'orders,orders.*'")
	}
	fs, vals := newFlags("apikey create")
	name := fs.String("name", "", "a label for the key")
	topics := fs.String("topics", "", "comma-separated topic names or patterns (* matches any run of characters)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	pats := splitList(*topics)
	if *name == "" || len(pats) == 0 {
		return errors.New("give --name and --topics")
	}
	for _, p := range pats {
		if !models.ValidTopicPattern(p) {
			return fmt.Errorf("topic pattern %q is not valid", p)
		}
	}
	cfg, err := loadConfig(vals)
	if err != nil {
		return err
	}
	st, err := openMigratedStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	key, prefix, hash := auth.NewAPIKey()
	if err := st.APIKeyCreate(ctx, &models.APIKey{Name: *name, Prefix: prefix, Hash: hash, Topics: pats}); err != nil {
		return err
	}
	fmt.Println(key)
	return nil
}

// bootstrapAdmin creates HERALD_ADMIN_USER when no user exists yet.
func bootstrapAdmin(ctx context.Context, a *app.App) error {
	if a.Cfg.AdminUser == "" || a.Cfg.AdminPassword == "" {
		return nil
	}
	n, err := a.Store.UserCount(ctx)
	if err != nil || n > 0 {
		return err
	}
	hash, err := auth.HashPassword(a.Cfg.AdminPassword, a.Cfg.BcryptCost)
	if err != nil {
		return fmt.Errorf("HERALD_ADMIN_PASSWORD: %w", err)
	}
	err = a.Store.UserCreate(ctx, &models.User{Username: a.Cfg.AdminUser, PasswordHash: hash, Role: models.RoleAdmin})
	if errors.Is(err, models.ErrConflict) {
		return nil
	}
	return err
}
