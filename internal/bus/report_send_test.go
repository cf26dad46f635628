package bus_test

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
)

// senderSetup returns report senders to a namespace of their own on the test
// Redis, lingering linger, and the namespace's keys and client.
func senderSetup(t *testing.T, linger time.Duration) (*bus.ReportSenders, *redis.Client, delivery.Keys) {
	t.Helper()
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	return bus.NewReportSenders(rdb, keys, linger, make(chan struct{}), slog.New(slog.NewTextHandler(io.Discard, nil))), rdb, keys
}

// streamReports returns the task ids of every report in owner's stream, and its
// entry count.
func streamReports(t *testing.T, rdb *redis.Client, keys delivery.Keys) (ids []string, entries int) {
	t.Helper()
	msgs, err := rdb.XRange(t.Context(), keys.Reports("owner"), "-", "+").Result()
	require.NoError(t, err)
	for _, m := range msgs {
		rs, err := delivery.ParseReportEntry(m.Values)
		require.NoError(t, err)
		for _, r := range rs {
			ids = append(ids, r.TaskID)
		}
	}
	return ids, len(msgs)
}

// TestReportSenderGathers sends reports as jobs finishing 2 ms apart (500 jobs/s,
// one message each) do, with ReportLinger 0, 2 and 5 ms: every report lands in the
// owner's stream exactly once, and lingering gathers several into one XADD.
func TestReportSenderGathers(t *testing.T) {
	t.Parallel()
	const n, every = 250, 2 * time.Millisecond
	for _, linger := range []time.Duration{0, 2 * time.Millisecond, 5 * time.Millisecond} {
		t.Run(linger.String(), func(t *testing.T) {
			t.Parallel()
			s, rdb, keys := senderSetup(t, linger)
			start := time.Now()
			var wg sync.WaitGroup
			for i := range n {
				time.Sleep(time.Until(start.Add(time.Duration(i) * every))) // stands for the jobs' pace
				wg.Go(func() {
					s.Send("owner", fmt.Appendf(nil, `{"id":"j%d"}`, i), false)
				})
			}
			wg.Wait()
			ids, entries := streamReports(t, rdb, keys)
			require.Len(t, ids, n)
			seen := map[string]bool{}
			for _, id := range ids {
				require.False(t, seen[id], "report %s sent twice", id)
				seen[id] = true
			}
			t.Logf("linger %v: %d reports in %d XADDs (%.2f per XADD) over %v", linger, n, entries, float64(n)/float64(entries), time.Since(start).Round(time.Millisecond))
			if linger >= 5*time.Millisecond {
				require.GreaterOrEqual(t, float64(n)/float64(entries), 1.5, "a 5 ms linger at 500 reports/s gathers")
			}
		})
	}
}

// TestReportSenderUrgentCutsLinger: a report an ordered group waits for goes at
// once, and takes the lingering reports with it.
func TestReportSenderUrgentCutsLinger(t *testing.T) {
	t.Parallel()
	s, rdb, keys := senderSetup(t, time.Hour) // longer than the test: only the urgent report ends the wait
	start := time.Now()
	lingered := make(chan struct{})
	go func() { s.Send("owner", []byte(`{"id":"unordered"}`), false); close(lingered) }()
	select {
	case <-lingered:
		t.Fatal("an unordered job's report went without lingering")
	case <-time.After(50 * time.Millisecond): // proves an absence: still lingering
	}
	s.Send("owner", []byte(`{"id":"ordered"}`), true)
	<-lingered
	require.Less(t, time.Since(start), 10*time.Second)
	ids, entries := streamReports(t, rdb, keys)
	require.ElementsMatch(t, []string{"unordered", "ordered"}, ids)
	require.Equal(t, 1, entries, "one XADD for both")
}
