// Package heraldtest gives each test real infrastructure of its own: a fresh MariaDB
// database with migrations applied, a unique Redis namespace (asynq queue, report
// lists, notify channel), and an in-process Herald with every role on a random
// loopback port. A missing service fails the test with a clear message; it never skips.
//
// HERALD_TEST_MYSQL_DSN (default "root@tcp(127.0.0.1:3306)/") and
// HERALD_TEST_REDIS_ADDR (default 127.0.0.1:6379) point at the servers.
package heraldtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models/store"
)

// MySQLBase returns the server DSN without a database.
func MySQLBase() string {
	if s := os.Getenv("HERALD_TEST_MYSQL_DSN"); s != "" {
		return s
	}
	return "root@tcp(127.0.0.1:3306)/"
}

// RedisAddr returns the test Redis address.
func RedisAddr() string {
	if s := os.Getenv("HERALD_TEST_REDIS_ADDR"); s != "" {
		return s
	}
	return "127.0.0.1:6379"
}

// RandomName returns prefix plus 10 random hex characters.
func RandomName(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Database creates a fresh database with migrations applied, drops it when the test
// ends, and returns its DSN and an open Store.
func Database(t testing.TB) (string, *store.Store) {
	t.Helper()
	ctx := context.Background()
	cfg, err := mysql.ParseDSN(MySQLBase())
	require.NoError(t, err, "HERALD_TEST_MYSQL_DSN is not a valid DSN")
	name := RandomName("herald_t_")
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer admin.Close()
	require.NoError(t, admin.PingContext(ctx), "MariaDB/MySQL must answer at %s (run `make services`)", cfg.Addr)
	_, err = admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	require.NoError(t, err)
	t.Cleanup(func() {
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err == nil {
			_, _ = db.Exec("DROP DATABASE IF EXISTS " + name)
			db.Close()
		}
	})
	cfg.DBName = name
	dsn := cfg.FormatDSN()
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	st.SetPoolSize(4) // the test's own queries; parallel tests share one server's max_connections
	t.Cleanup(func() { st.Close() })
	require.NoError(t, st.MigrateUp(ctx))
	return dsn, st
}

// Redis returns a client and a namespace unique to the test; keys under the
// namespace and its asynq queue are deleted when the test ends. It never flushes
// the whole server, so tests run in parallel.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: RedisAddr()})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, rdb.Ping(ctx).Err(), "Redis must answer at %s (run `make services`)", RedisAddr())
	ns := RandomName("t")
	t.Cleanup(func() {
		ctx := context.Background()
		keys := delivery.Keys{Namespace: ns}
		for _, pat := range keys.Patterns() {
			iter := rdb.Scan(ctx, 0, pat, 1000).Iterator()
			for iter.Next(ctx) {
				rdb.Del(ctx, iter.Val())
			}
		}
		rdb.SRem(ctx, delivery.AsynqQueuesSet, keys.AsynqQueue())
		rdb.Close()
	})
	return rdb, ns
}
