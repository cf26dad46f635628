// Package store is the only package that talks SQL. One Store wraps a gorm DB for
// control tables and the underlying *sql.DB for queue tables (hot paths). Methods
// are named noun-first (TopicCreate, CursorsCommit) and translate MySQL errors into
// models errors. SQL here runs on both MySQL 8 and MariaDB 10.11.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/heraldhq/herald/internal/secrets"
	"github.com/heraldhq/herald/models"
)

// Store is a handle on one db node's control and queue tables. Safe for concurrent
// use. A Store bound to a transaction (WithTx's tx) runs every method in it, gorm and
// raw SQL alike.
type Store struct {
	db      *gorm.DB
	sql     conn    // pool, or the transaction of a bound Store
	pool    *sql.DB // the connection pool, also for a bound Store
	tx      *sql.Tx // the transaction of a bound Store; nil otherwise
	mariadb bool
	dsn     string
	keys    *secrets.Keyring // seals signing secrets at rest; nil stores plaintext (UseKeyring)
	npool   *nodePool        // the other db nodes' pools and the queue→node cache, shared by bound Stores
}

// DSN I/O timeouts NormalizeDSN adds when a DSN sets none: a stalled server fails
// the connection instead of holding a pool slot (and a publish) forever.
const (
	DefaultDialTimeout  = 5 * time.Second
	DefaultReadTimeout  = 30 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// SessionSQLMode is the sql_mode every Herald connection sets for its session (the
// server's global setting is left alone): strict for every table (an out-of-range or
// too-long value fails the statement), as MySQL 8's and MariaDB 10.11's defaults
// without ONLY_FULL_GROUP_BY, quoted for the DSN.
const SessionSQLMode = "'STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"

// NormalizeDSN parses a go-sql-driver DSN and sets what Herald relies on: parseTime,
// UTC, utf8mb4, strict SessionSQLMode (replacing a sql_mode the DSN sets), and
// interpolateParams (one round trip per statement); timeout,
// readTimeout and writeTimeout default to DefaultDialTimeout, DefaultReadTimeout and
// DefaultWriteTimeout when the DSN leaves them unset.
func NormalizeDSN(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse mysql dsn: %w", err)
	}
	return normalizeConfig(cfg)
}

// normalizeConfig sets on a parsed DSN what NormalizeDSN promises.
func normalizeConfig(cfg *mysql.Config) (*mysql.Config, error) {
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["charset"] = "utf8mb4"
	cfg.Params["time_zone"] = "'+00:00'"
	// Strict per session, whatever the server's global sql_mode: a value too long for
	// its column fails its statement instead of being truncated into a row nobody
	// can read back.
	cfg.Params["sql_mode"] = SessionSQLMode
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultDialTimeout
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.MaxAllowedPacket == 0 {
		cfg.MaxAllowedPacket = 64 << 20
	}
	return cfg, nil
}

// DefaultPoolSize is the most MySQL connections one Store opens (and keeps idle)
// unless SetPoolSize changes it.
const DefaultPoolSize = 64

// SetPoolSize caps the Store's MySQL connections at n (open and idle; n < 1 is
// ignored). Every process of a deployment adds its pool to the server's
// max_connections budget.
func (s *Store) SetPoolSize(n int) {
	if n < 1 {
		return
	}
	s.pool.SetMaxOpenConns(n)
	s.pool.SetMaxIdleConns(n)
	s.npool.setPoolSize(n)
}

// Open connects to the db node at dsn, checks the server (auto_increment_increment
// must be 1, so a missing id means a hole) and returns a Store. It does not migrate.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := NormalizeDSN(dsn)
	if err != nil {
		return nil, err
	}
	sqlDB, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	sqlDB.SetMaxOpenConns(DefaultPoolSize)
	sqlDB.SetMaxIdleConns(DefaultPoolSize)
	sqlDB.SetConnMaxLifetime(time.Hour)
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("connect to mysql at %s: %w", cfg.Addr, err)
	}
	var version string
	var incr int
	if err := sqlDB.QueryRowContext(ctx, "SELECT VERSION(), @@auto_increment_increment").Scan(&version, &incr); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("read server version: %w", err)
	}
	if incr != 1 {
		sqlDB.Close()
		return nil, fmt.Errorf("auto_increment_increment is %d on %s; Herald's gap rule needs 1", incr, cfg.Addr)
	}
	gdb, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB}), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		PrepareStmt:            false,
	})
	if err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("open gorm: %w", err)
	}
	return &Store{db: gdb, sql: sqlDB, pool: sqlDB, mariadb: strings.Contains(strings.ToLower(version), "mariadb"), dsn: cfg.FormatDSN(), npool: newNodePool()}, nil
}

// Close releases the connection pools (the control database's and every other
// db node's).
func (s *Store) Close() error {
	s.npool.close()
	return s.pool.Close()
}

// MariaDB reports whether the server is MariaDB (true) or MySQL (false).
func (s *Store) MariaDB() bool { return s.mariadb }

// DB returns the underlying *sql.DB, for tests and benchmarks that inspect tables.
// It is the pool even on a bound Store.
func (s *Store) DB() *sql.DB { return s.pool }

// Ping checks the connection, for /readyz.
func (s *Store) Ping(ctx context.Context) error { return s.pool.PingContext(ctx) }

// WithTx runs fn in one transaction on a Store bound to it; fn's error (or panic)
// rolls back, nil commits. Every method of tx runs in the transaction, including
// those that write with raw SQL or open a transaction of their own: those join this
// one (their commit is deferred to WithTx's, their error rolls back all of it). On
// a bound Store WithTx nests with a savepoint. Statements on one transaction run
// one at a time, so fn must not call tx from several goroutines. DDL (CREATE TABLE)
// commits implicitly in MySQL: keep it out of fn.
func (s *Store) WithTx(ctx context.Context, fn func(tx *Store) error) error {
	return s.db.WithContext(ctx).Transaction(func(gtx *gorm.DB) error {
		sqlTx, ok := gtx.Statement.ConnPool.(*sql.Tx)
		if !ok {
			return fmt.Errorf("begin transaction: gorm holds a %T, not a *sql.Tx", gtx.Statement.ConnPool)
		}
		return fn(&Store{db: gtx, sql: sqlTx, pool: s.pool, tx: sqlTx, mariadb: s.mariadb, dsn: s.dsn, keys: s.keys, npool: s.npool})
	})
}

// conn is what *sql.DB and *sql.Tx share: the statements a Store method runs.
type conn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// txConn is a transaction a method opened with begin.
type txConn interface {
	conn
	Commit() error
	Rollback() error
}

// begin opens a transaction for a method that needs several statements to be
// atomic. On a bound Store it joins the bound transaction: Commit and Rollback are
// then no-ops, and the error the method returns makes WithTx roll back.
func (s *Store) begin(ctx context.Context) (txConn, error) {
	if s.tx != nil {
		return joinedTx{s.tx}, nil
	}
	tx, err := s.pool.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return tx, nil
}

// joinedTx is a bound Store's transaction as seen by a method that began its own.
type joinedTx struct{ *sql.Tx }

func (joinedTx) Commit() error   { return nil }
func (joinedTx) Rollback() error { return nil }

// Now returns the database clock (UTC, ms precision). Leases and holes use database
// time, never local clocks.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.sql.QueryRowContext(ctx, "SELECT NOW(3)").Scan(&t)
	return t, err
}

// isNoTable reports whether err is ER_NO_SUCH_TABLE (1146): a queue table that was
// dropped, as a retired queue's is.
func isNoTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146
}

func isDuplicate(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1062
}

func notFound(err error, what string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) || errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, models.ErrNotFound)
	}
	return fmt.Errorf("%s: %w", what, err)
}
