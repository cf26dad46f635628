package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

func runMigrate(ctx context.Context, args []string) error {
	fs, vals := newFlags("migrate")
	if err := parseFlags(fs, args, "usage: herald migrate up|down|status [flags]\n\nApply, undo (one step) or show the schema migrations."); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: herald migrate up|down|status")
	}
	switch fs.Arg(0) {
	case "up", "down", "status":
	default:
		return usagef("usage: herald migrate up|down|status")
	}
	cfg, err := loadConfig(vals)
	if err != nil {
		return err
	}
	s, err := app.Migrate(ctx, cfg.MySQLDSN, fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Printf("schema version %d of %d (dirty=%v)\n", s.Current, s.Latest, s.Dirty)
	return nil
}

// cliActor is who the audit log names for changes made with the herald CLI.
var cliActor = control.Actor{Username: "cli", Via: "cli", Role: models.RoleAdmin}

func runUser(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "create" {
		return usagef("usage: herald user create --username U --password P [--role admin|operator|viewer]\n" +
			"(directly in the database; over HTTP: herald users list|create|patch|delete|revoke-tokens)")
	}
	fs, vals := newFlags("user create")
	name := fs.String("username", "", "username")
	pw := fs.String("password", "", "password, 8 to 72 bytes")
	role := fs.String("role", "admin", "admin, operator or viewer")
	if err := parseFlags(fs, args[1:], "usage: herald user create --username U --password P [--role admin|operator|viewer]\n\nCreate a user directly in the database (HERALD_MYSQL_DSN)."); err != nil {
		return err
	}
	return withControl(ctx, vals, func(ctl *control.Control) error {
		u, err := ctl.CreateUser(ctx, cliActor, control.UserSpec{Username: *name, Password: *pw, Role: models.Role(*role)})
		if err == nil {
			fmt.Printf("user %s created (id %d, role %s)\n", u.Username, u.ID, u.Role)
		}
		return err
	})
}

func runAPIKey(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "create" {
		return usagef("usage: herald apikey create --name N --topics 'orders,orders.*'")
	}
	fs, vals := newFlags("apikey create")
	name := fs.String("name", "", "a label for the key")
	topics := fs.String("topics", "", "comma-separated topic names or patterns (* matches any run of characters)")
	if err := parseFlags(fs, args[1:], "usage: herald apikey create --name N --topics 'orders,orders.*'\n\nCreate an API key directly in the database (HERALD_MYSQL_DSN); 'herald key create' does it over HTTP."); err != nil {
		return err
	}
	return withControl(ctx, vals, func(ctl *control.Control) error {
		key, _, err := ctl.CreateAPIKey(ctx, cliActor, control.APIKeySpec{Name: *name, Topics: splitList(*topics)})
		if err == nil {
			fmt.Println(key)
		}
		return err
	})
}

// withControl runs fn with the control actions of the configured installation
// (schema up to date; app.Open with no role builds them as every role gets them)
// and spells a validation error it returns as flags.
func withControl(ctx context.Context, vals map[string]*string, fn func(*control.Control) error) error {
	cfg, err := loadConfig(vals)
	if err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, app.Roles{}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return err
	}
	defer a.Close()
	return cliError(fn(a.Control))
}

// cliError spells a validation error as flags: "--name: names are 1 to 120 bytes …".
func cliError(err error) error {
	var v *models.ValidationError
	if err == nil {
		return nil
	}
	if !errors.As(err, &v) {
		return err
	}
	msgs := make([]string, 0, len(v.Errors))
	for _, fe := range v.Errors {
		flag := strings.TrimPrefix(fe.Pointer, "/")
		if i := strings.IndexByte(flag, '/'); i >= 0 {
			flag = flag[:i]
		}
		msgs = append(msgs, "--"+flag+": "+fe.Detail)
	}
	return errors.New(strings.Join(msgs, "; "))
}

// bootstrapAdmin creates HERALD_ADMIN_USER when no user exists yet (audited as the
// system's user.create).
func bootstrapAdmin(ctx context.Context, a *app.App) error {
	if a.Cfg.AdminUser == "" || a.Cfg.AdminPassword == "" {
		return nil
	}
	n, err := a.Control.UserCount(ctx)
	if err != nil || n > 0 {
		return err
	}
	_, err = a.Control.CreateUser(ctx, control.System,
		control.UserSpec{Username: a.Cfg.AdminUser, Password: a.Cfg.AdminPassword, Role: models.RoleAdmin})
	var v *models.ValidationError
	switch {
	case errors.Is(err, models.ErrConflict):
		return nil
	case errors.As(err, &v):
		return fmt.Errorf("HERALD_ADMIN_USER / HERALD_ADMIN_PASSWORD: %w", err)
	}
	return err
}
