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
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/testdb"
	"github.com/heraldhq/herald/models/store"
)

// MySQLBase returns the server DSN without a database (testdb.MySQLBase).
func MySQLBase() string { return testdb.MySQLBase() }

// RedisAddr returns the test Redis address (testdb.RedisAddr).
func RedisAddr() string { return testdb.RedisAddr() }

// RandomName returns prefix plus 10 random hex characters.
func RandomName(prefix string) string { return testdb.RandomName(prefix) }

// Database creates a fresh database with migrations applied, drops it when the test
// ends, and returns its DSN and an open Store (testdb.Database).
func Database(t testing.TB) (string, *store.Store) {
	t.Helper()
	return testdb.Database(t)
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
