// Package testdb gives a test a fresh MariaDB database of its own, with migrations
// applied, without the rest of heraldtest: packages that heraldtest's in-process
// Herald imports (dispatcher, worker) use it in their internal tests.
//
// HERALD_TEST_MYSQL_DSN (default "root@tcp(127.0.0.1:3306)/") and
// HERALD_TEST_REDIS_ADDR (default 127.0.0.1:6379) point at the servers.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
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
// ends, and returns its DSN and an open Store (a pool of 4 connections: parallel
// tests share one server's max_connections). A server that does not answer fails
// the test with a clear message; it never skips.
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
	st.SetPoolSize(4)
	t.Cleanup(func() { st.Close() })
	require.NoError(t, st.MigrateUp(ctx))
	return dsn, st
}

// Publish stores n one-byte messages in queue of topic, in one request, and fails
// the test on an error.
func Publish(t testing.TB, st *store.Store, topic, queue int64, n int) {
	t.Helper()
	r := &store.PublishRequest{TopicID: topic}
	for range n {
		r.Messages = append(r.Messages, models.Message{QueueID: queue, Body: []byte("m"), ContentType: "text/plain", CreatedAt: 1})
	}
	require.NoError(t, st.Queues().MessagesInsert(context.Background(), []*store.PublishRequest{r}))
}
