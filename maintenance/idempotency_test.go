package maintenance_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestIdempotencyKeysPruned: maintenance deletes idempotency rows past their 24 h
// in bounded chunks (7 rows, 20 a run) over several runs, and keeps the live ones.
func TestIdempotencyKeysPruned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.RetentionInterval, b.cfg.RetentionChunk, b.cfg.RetentionBudget = 20*time.Millisecond, 7, time.Second
	b.cfg.HygieneInterval, b.cfg.RetentionPause = time.Hour, time.Millisecond
	db, err := sql.Open("mysql", b.dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	insert := func(key string, age string) {
		_, err := db.Exec("INSERT INTO idempotency_keys (api_key_id, topic_id, idem_key, request_hash, status_code, response, created_at) VALUES (1, 1, ?, REPEAT('x', 32), 201, '{}', NOW(3) - INTERVAL "+age+")", key)
		require.NoError(t, err)
	}
	for i := range 300 {
		insert(fmt.Sprintf("old-%d", i), "25 HOUR")
	}
	insert("young", "23 HOUR")
	insert("new", "0 SECOND")
	count := func() int {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM idempotency_keys").Scan(&n))
		return n
	}
	m, _ := b.start(t)
	require.Eventually(t, m.Leader, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return count() == 2 }, 10*time.Second, 20*time.Millisecond)
	var left []string
	rows, err := db.QueryContext(context.Background(), "SELECT idem_key FROM idempotency_keys ORDER BY idem_key")
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		left = append(left, k)
	}
	require.Equal(t, []string{"new", "young"}, left)
}
