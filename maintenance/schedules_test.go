package maintenance_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

// TestScheduleTicksOnceEach: eight goroutines firing the same tick of a schedule
// park one message, not eight; a schedule whose last three ticks were missed
// (no leader ran) publishes one message for them when the leader runs, and its
// next tick is the first after now; a paused schedule publishes nothing. Every
// message a tick parked reaches the topic's queue.
func TestScheduleTicksOnceEach(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	topic, err := b.st.TopicCreate(ctx, "reminders", 1)
	require.NoError(t, err)
	db, err := sql.Open("mysql", b.dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, db.QueryRow(q, args...).Scan(&n))
		return n
	}
	now := time.Now().UTC()
	create := func(name string, next time.Time, paused bool) *models.Schedule {
		sc := &models.Schedule{Name: name, TopicID: topic.ID, Cron: "* * * * *", Timezone: "Europe/Paris", Paused: paused, NextRun: next,
			Message: models.Message{Body: []byte(`{"job":"` + name + `"}`), ContentType: "application/json", Tag: "cron", Headers: map[string]string{"X-Job": name}}}
		require.NoError(t, b.st.ScheduleCreate(ctx, sc))
		return sc
	}

	race := create("race", now.Add(-time.Second).Truncate(time.Millisecond), false)
	var wg sync.WaitGroup
	var mu sync.Mutex
	fired := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := b.st.ScheduleFire(ctx, race, now.Add(time.Hour))
			require.NoError(t, err)
			if ok {
				mu.Lock()
				fired++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, fired, "one of eight firings of the same tick wins")
	require.Equal(t, 1, count("SELECT COUNT(*) FROM delayed_messages"), "one message parked for the tick")

	missedTick := now.Add(-3 * time.Minute).Truncate(time.Minute)
	missed := create("missed", missedTick, false)
	create("paused", missedTick, true)
	m, _ := b.start(t)
	require.Eventually(t, m.Leader, 5*time.Second, 10*time.Millisecond)
	table := models.QueueTableName(topic.Queues[0].ID)
	require.Eventually(t, func() bool { return count("SELECT COUNT(*) FROM "+table) == 2 }, 10*time.Second, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // absence: no further message for the missed ticks or the paused schedule
	require.Equal(t, 2, count("SELECT COUNT(*) FROM "+table), "the race's tick and one for the three missed ones")
	require.Equal(t, 0, count("SELECT COUNT(*) FROM delayed_messages"))
	require.Equal(t, 1, count("SELECT COUNT(*) FROM "+table+" WHERE body = ? AND tag = 'cron' AND headers LIKE '%X-Job%' AND JSON_VALUE(headers, '$.\"herald-schedule\"') = 'missed' AND JSON_VALUE(headers, '$.\"herald-schedule-tick\"') = ?",
		`{"job":"missed"}`, missedTick.Format("2006-01-02T15:04:05.000Z07:00")))

	got, err := b.st.ScheduleGet(ctx, "missed")
	require.NoError(t, err)
	require.EqualValues(t, 1, got.Runs)
	require.Equal(t, missed.NextRun, got.LastRun, "the last run is the missed tick published")
	require.True(t, got.NextRun.After(time.Now()), "next run %v is after now", got.NextRun)
	require.Zero(t, got.NextRun.Second())
	require.Equal(t, "reminders", got.Topic)
	p, err := b.st.ScheduleGet(ctx, "paused")
	require.NoError(t, err)
	require.Zero(t, p.Runs)
	require.Equal(t, missedTick, p.NextRun)
}
