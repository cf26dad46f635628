package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4"
	migratemysql "github.com/golang-migrate/migrate/v4/database/mysql"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/models"
)

// MigrationStatus is the schema version applied on a node and the newest one this
// binary carries. Dirty means a migration failed half-way and needs an operator.
type MigrationStatus struct {
	Current uint
	Latest  uint
	Dirty   bool
}

// Pending reports whether migrations remain to apply.
func (m MigrationStatus) Pending() bool { return m.Dirty || m.Current < m.Latest }

func (s *Store) migrator() (*migrate.Migrate, *sql.DB, error) {
	cfg, err := NormalizeDSN(s.dsn)
	if err != nil {
		return nil, nil, err
	}
	cfg.MultiStatements = true
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, nil, err
	}
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	drv, err := migratemysql.WithInstance(db, &migratemysql.Config{})
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open migration driver: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "mysql", drv)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return m, db, nil
}

// MigrateUp applies every pending migration.
func (s *Store) MigrateUp(ctx context.Context) error {
	m, db, err := s.migrator()
	if err != nil {
		return err
	}
	defer db.Close()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// MigrateDown reverts the newest applied migration.
func (s *Store) MigrateDown(ctx context.Context) error {
	m, db, err := s.migrator()
	if err != nil {
		return err
	}
	defer db.Close()
	if err := m.Steps(-1); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate down: %w", err)
	}
	return nil
}

// MigrationStatus reads the applied version and the newest embedded one.
func (s *Store) MigrationStatus(ctx context.Context) (MigrationStatus, error) {
	var st MigrationStatus
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return st, err
	}
	v, err := src.First()
	for err == nil {
		st.Latest = v
		v, err = src.Next(v)
	}
	m, db, err := s.migrator()
	if err != nil {
		return st, err
	}
	defer db.Close()
	cur, dirty, err := m.Version()
	if err != nil && !errors.Is(err, migrate.ErrNilVersion) {
		return st, fmt.Errorf("read schema version: %w", err)
	}
	st.Current, st.Dirty = cur, dirty
	return st, nil
}

// CheckMigrations returns ErrMigrationsPending when the schema is behind this binary.
// Every role calls it before starting.
func (s *Store) CheckMigrations(ctx context.Context) error {
	st, err := s.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	if st.Pending() {
		return fmt.Errorf("schema at version %d, binary needs %d (dirty=%v): %w", st.Current, st.Latest, st.Dirty, models.ErrMigrationsPending)
	}
	return nil
}
