package store_test

import (
	"context"
	"database/sql"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// BenchmarkPublishDuringPrune measures what retention's chunked deletes cost
// publishers: it fills one queue table with HERALD_BENCH_PRUNE_ROWS old rows
// (default 300,000) of 1 KiB bodies, then publishes 1,000 msg/s (10 messages every
// 10 ms, one MessagesInsert each, as a group-commit flush would) for 10 s without
// pruning, 10 s while QueuePrune deletes the old rows in chunks of
// HERALD_BENCH_PRUNE_CHUNK (default 1000) with HERALD_BENCH_PRUNE_PAUSE_MS (default
// 50) between chunks, and 10 s while a second table of the same
// size is dropped (table rotation, PMQ's truncate of retired tables). It reports the
// flush latency percentiles of each phase and the rows pruned per second. Run once:
// go test -run '^$' -bench PublishDuringPrune -benchtime 1x ./models/store/
func BenchmarkPublishDuringPrune(b *testing.B) {
	rows := envInt("HERALD_BENCH_PRUNE_ROWS", 300_000)
	chunk := envInt("HERALD_BENCH_PRUNE_CHUNK", 1000)
	pause := time.Duration(envInt("HERALD_BENCH_PRUNE_PAUSE_MS", 50)) * time.Millisecond
	dsn, st := heraldtest.Database(b)
	ctx := context.Background()
	topic, err := st.TopicCreate(ctx, "bench", 2)
	require.NoError(b, err)
	q, spare := topic.Queues[0].ID, topic.Queues[1].ID
	db, err := sql.Open("mysql", dsn)
	require.NoError(b, err)
	defer db.Close()
	fill := func(queue int64) {
		table := models.QueueTableName(queue)
		old := time.Now().Add(-30 * 24 * time.Hour).UnixMilli()
		_, err := db.Exec("INSERT INTO "+table+" (body, content_type, created_at) VALUES (REPEAT('x', 1024), 'application/json', ?)", old)
		require.NoError(b, err)
		for n := 1; n < rows; n *= 2 {
			_, err := db.Exec("INSERT INTO "+table+" (body, content_type, created_at) SELECT body, content_type, created_at FROM "+table+" LIMIT ?", rows-n)
			require.NoError(b, err)
		}
	}
	start := time.Now()
	fill(q)
	fill(spare)
	b.Logf("filled 2 × %d rows in %v", rows, time.Since(start).Round(time.Millisecond))
	var through int64
	require.NoError(b, db.QueryRow("SELECT MAX(id) FROM "+models.QueueTableName(q)).Scan(&through))
	body := make([]byte, 1024)
	for i := range body {
		body[i] = 'y'
	}
	publish := func(d time.Duration) []time.Duration {
		var lat []time.Duration
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			<-tick.C
			req := &store.PublishRequest{}
			for range 10 {
				req.Messages = append(req.Messages, models.Message{QueueID: q, Body: body, ContentType: "application/json", CreatedAt: time.Now().UnixMilli()})
			}
			t0 := time.Now()
			require.NoError(b, st.Queues().MessagesInsert(ctx, []*store.PublishRequest{req}))
			lat = append(lat, time.Since(t0))
		}
		return lat
	}
	report := func(name string, lat []time.Duration) {
		slices.Sort(lat)
		p := func(f float64) time.Duration { return lat[int(f*float64(len(lat)-1))] }
		b.Logf("%-10s flushes %d  p50 %v  p99 %v  max %v", name, len(lat), p(0.5), p(0.99), lat[len(lat)-1])
		b.ReportMetric(float64(p(0.99).Microseconds()), name+"_p99_µs")
	}
	b.ResetTimer()
	// Phases alternate every 2 s, 6 rounds, so the load of other processes on the
	// machine falls on both alike.
	var pruning atomic.Bool
	var pruned atomic.Int64
	var pruneBusy atomic.Int64 // ns spent in DELETEs
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if !pruning.Load() {
				time.Sleep(5 * time.Millisecond) // latency: waits for the pruner to start (a benchmark loop)
				continue
			}
			t0 := time.Now()
			n, done, err := st.Queues().QueuePrune(ctx, q, through, chunk, 1)
			require.NoError(b, err)
			pruneBusy.Add(int64(time.Since(t0)))
			pruned.Add(n)
			if done {
				pruning.Store(false)
				<-stop
				return
			}
			time.Sleep(pause) // as maintenance's RetentionPause
		}
	}()
	var base, during []time.Duration
	var pruneWall time.Duration
	for range 6 {
		base = append(base, publish(2*time.Second)...)
		pruning.Store(true)
		t0 := time.Now()
		during = append(during, publish(2*time.Second)...)
		pruneWall += time.Since(t0)
		pruning.Store(false)
	}
	close(stop)
	wg.Wait()
	report("baseline", base)
	report("pruning", during)
	b.Logf("pruned %d rows in %v of pruning phases (%.0f rows/s, DELETEs busy %.0f%% of the time)", pruned.Load(), pruneWall.Round(time.Millisecond),
		float64(pruned.Load())/pruneWall.Seconds(), 100*float64(pruneBusy.Load())/float64(pruneWall))
	b.ReportMetric(float64(pruned.Load())/pruneWall.Seconds(), "pruned_rows/s")

	wg.Add(1)
	var dropTime time.Duration
	go func() {
		defer wg.Done()
		time.Sleep(time.Second) // latency: pruning runs a second before the DROP
		t0 := time.Now()
		_, err := db.Exec("DROP TABLE " + models.QueueTableName(spare))
		require.NoError(b, err)
		dropTime = time.Since(t0)
	}()
	report("dropping", publish(10*time.Second))
	wg.Wait()
	b.Logf("dropped a %d-row table in %v", rows, dropTime.Round(time.Millisecond))
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
