package maintenance_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/maintenance"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// retentionSetup is a database with topic "orders" (one queue, retention 1 h) whose
// first 100 messages are 2 h old and last 10 fresh, and groups "fast" (cursor at
// 100) and "slow" (cursor at 40).
type retentionSetup struct {
	bundle
	db    *sql.DB
	queue int64
	slow  *models.Group
}

func setupRetention(t *testing.T) retentionSetup {
	t.Helper()
	dsn, st := heraldtest.Database(t)
	rdb, ns := heraldtest.Redis(t)
	b := bundle{st: st, rdb: rdb, keys: delivery.Keys{Namespace: ns}, cfg: config.Maintenance{LeaseDuration: 2 * time.Second,
		RenewInterval: 100 * time.Millisecond, OutboxInterval: time.Hour, LagInterval: time.Hour, AttemptRetention: 168 * time.Hour}}
	b.cfg.RetentionInterval, b.cfg.RetentionChunk, b.cfg.RetentionBudget = 20*time.Millisecond, 7, time.Second
	b.cfg.HygieneInterval, b.cfg.RetentionPause = time.Hour, time.Millisecond
	ctx := context.Background()
	topic, err := st.TopicCreate(ctx, "orders", 1)
	require.NoError(t, err)
	require.NoError(t, st.TopicSetRetention(ctx, topic.ID, 1, models.RetentionConsumed))
	q := topic.Queues[0].ID
	old := time.Now().Add(-2 * time.Hour).UnixMilli()
	for i := range 110 {
		at := old
		if i >= 100 {
			at = time.Now().UnixMilli()
		}
		req := &store.PublishRequest{Messages: []models.Message{{QueueID: q, Body: []byte(`{}`), ContentType: "application/json", CreatedAt: at}}}
		require.NoError(t, st.Queues().MessagesInsert(ctx, []*store.PublishRequest{req}))
	}
	var groups []*models.Group
	// Unique names: the expiry counter is process-wide and tests run in parallel.
	for _, name := range []string{heraldtest.RandomName("fast"), heraldtest.RandomName("slow")} {
		g := &models.Group{Name: name, EndpointURL: "http://127.0.0.1:9/hook", SigningSecret: signing.NewSecret(),
			Subscriptions: []models.Subscription{{Topic: "orders"}}, ConsumeFrom: models.ConsumeEarliest}
		g.ApplyDefaults()
		require.NoError(t, st.GroupCreate(ctx, g))
		groups = append(groups, g)
	}
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	exec := func(q string, args ...any) {
		_, err := db.Exec(q, args...)
		require.NoError(t, err)
	}
	exec("UPDATE cursors SET committed_offset = 100 WHERE group_id = ?", groups[0].ID)
	exec("UPDATE cursors SET committed_offset = 40 WHERE group_id = ?", groups[1].ID)
	// Offset 20 waits in fast's retry topic and 30 is one of its dead letters: both
	// below every cursor, both kept.
	exec("INSERT INTO retry_messages (group_id, queue_id, msg_offset, attempt, due_at) VALUES (?, ?, 20, 2, NOW(3) + INTERVAL 1 HOUR)", groups[0].ID, q)
	exec("INSERT INTO dead_letters (group_id, queue_id, msg_offset, attempts) VALUES (?, ?, 30, 10)", groups[0].ID, q)
	return retentionSetup{bundle: b, db: db, queue: q, slow: groups[1]}
}

func (r retentionSetup) offsets(t *testing.T) []int64 {
	t.Helper()
	rows, err := r.db.Query("SELECT id FROM " + models.QueueTableName(r.queue) + " ORDER BY id")
	require.NoError(t, err)
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		out = append(out, id)
	}
	return out
}

func span(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// expiredMetric reads herald_messages_expired_total{group}.
func expiredMetric(t *testing.T, group string) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "herald_messages_expired_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "group" && l.GetValue() == group {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestRetentionKeepsWhatALaggingGroupNeeds: retention deletes old messages only up
// to the slowest group's cursor, keeps those a retry row or a dead letter names,
// and reports what the lagging group holds back.
func TestRetentionKeepsWhatALaggingGroupNeeds(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	m, _ := r.start(t)
	require.Eventually(t, m.Leader, 5*time.Second, 10*time.Millisecond)
	want := append([]int64{20, 30}, span(41, 110)...)
	require.Eventually(t, func() bool { return len(r.offsets(t)) == len(want) }, 10*time.Second, 20*time.Millisecond)
	m.TestSignals.DutyRan.Drain()
	waitDuties(t, m, maintenance.DutyRetention, maintenance.DutyRetention, maintenance.DutyRetention) // several more runs: nothing else goes
	require.Equal(t, want, r.offsets(t))
	st, err := r.st.QueueRetentionGet(context.Background(), r.queue, time.Now())
	require.NoError(t, err)
	require.EqualValues(t, 60, st.HeldBack, "41..100 are past retention and slow has not consumed them")
	require.Equal(t, map[int64]int64{r.slow.ID: 40}, st.HeldBackBy)
	require.Zero(t, expiredMetric(t, r.slow.Name))
}

// TestRetentionStrictCountsWhatItDropped: a strict topic drops what the lagging
// group had not consumed after retention, moves its cursor past it (a new version,
// fenced) and counts it per group, in the metric and in MySQL.
func TestRetentionStrictCountsWhatItDropped(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	topic, err := r.st.TopicGetByName(ctx, "orders")
	require.NoError(t, err)
	require.NoError(t, r.st.TopicSetRetention(ctx, topic.ID, 1, models.RetentionStrict))
	m, _ := r.start(t)
	require.Eventually(t, m.Leader, 5*time.Second, 10*time.Millisecond)
	want := append([]int64{20, 30}, span(101, 110)...)
	require.Eventually(t, func() bool { return len(r.offsets(t)) == len(want) }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, want, r.offsets(t))
	require.Equal(t, float64(60), expiredMetric(t, r.slow.Name))
	counted, err := r.st.RetentionExpiredByGroup(ctx, []int64{r.queue})
	require.NoError(t, err)
	require.Equal(t, map[int64]int64{r.slow.ID: 60}, counted, "fast lost nothing")
	cs, err := r.st.Cursors().CursorsByGroups(ctx, []int64{r.slow.ID})
	require.NoError(t, err)
	require.EqualValues(t, 100, cs[0].Offset, "slow's cursor moved past the dropped ids")
	require.EqualValues(t, 2, cs[0].Version, "as a reset: a new version fences the old jobs")
	f, err := r.rdb.HGet(ctx, r.keys.Fence(r.slow.ID), "1").Result()
	require.NoError(t, err)
	require.Equal(t, "2", f)
}

// TestDeadLettersAndDeletedGroupsExpire: dead letters older than their group's
// retention go, younger ones stay; a deleted group's rows go once its grace passed.
func TestDeadLettersAndDeletedGroupsExpire(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	_, err := r.db.Exec("INSERT INTO dead_letters (group_id, queue_id, msg_offset, attempts, created_at) VALUES (?, ?, 41, 10, NOW(3) - INTERVAL 337 HOUR)", r.slow.ID, r.queue)
	require.NoError(t, err)
	_, err = r.db.Exec("INSERT INTO dead_letters (group_id, queue_id, msg_offset, attempts, created_at) VALUES (?, ?, 42, 10, NOW(3) - INTERVAL 335 HOUR)", r.slow.ID, r.queue)
	require.NoError(t, err)
	_, err = r.db.Exec("INSERT INTO dead_letters (group_id, queue_id, msg_offset, attempts) VALUES (999, ?, 43, 10)", r.queue)
	require.NoError(t, err)
	_, err = r.db.Exec("INSERT INTO deleted_groups (group_id, name, purge_after) VALUES (999, 'gone', NOW(3) - INTERVAL 1 SECOND)")
	require.NoError(t, err)
	m, _ := r.start(t)
	require.Eventually(t, m.Leader, 5*time.Second, 10*time.Millisecond)
	count := func(q string) int {
		var n int
		require.NoError(t, r.db.QueryRowContext(ctx, q).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool {
		return count("SELECT COUNT(*) FROM deleted_groups") == 0 && count("SELECT COUNT(*) FROM dead_letters WHERE msg_offset = 41") == 0
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 0, count("SELECT COUNT(*) FROM dead_letters WHERE group_id = 999"))
	require.Equal(t, 1, count("SELECT COUNT(*) FROM dead_letters WHERE msg_offset = 42"), "younger than 336 h")
	require.Equal(t, 1, count("SELECT COUNT(*) FROM dead_letters WHERE msg_offset = 30"))
}

// TestAttemptPartitionsDropped: the attempt log keeps daily partitions and drops
// those wholly older than the retention, with their rows.
func TestAttemptPartitionsDropped(t *testing.T) {
	t.Parallel()
	dsn, st := heraldtest.Database(t)
	ctx := context.Background()
	now := time.Now().UTC()
	old := now.AddDate(0, 0, -10)
	require.NoError(t, st.AttemptsPartitions(ctx, old, 7*24*time.Hour))
	require.NoError(t, st.AttemptsInsert(ctx, []models.DeliveryAttempt{{GroupID: 1, QueueID: 1, Offset: 1, WebhookID: "msg_1_1", Attempt: 1, Status: 200, CreatedAt: old}}))
	require.NoError(t, st.AttemptsPartitions(ctx, now, 7*24*time.Hour))
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM delivery_attempts").Scan(&n))
	require.Zero(t, n, "the 10-day-old row went with its partition")
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'delivery_attempts' AND PARTITION_NAME = ?", "p"+old.Format("20060102")).Scan(&n))
	require.Zero(t, n)
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'delivery_attempts' AND PARTITION_NAME = ?", "p"+now.Format("20060102")).Scan(&n))
	require.Equal(t, 1, n, "today's partition exists")
}
