package bus_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/delivery"
)

// readCounter counts the XREAD commands a client sends.
type readCounter struct{ n atomic.Int64 }

func (c *readCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *readCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "xread") {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *readCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestReportStreamReadGathers: two workers each adding an entry every 5 ms (a 5 ms
// linger at 500 jobs/s) reach the dispatcher whole and in order; with a 5 ms gather
// one XREAD takes both workers' entries, without it every entry costs a read.
func TestReportStreamReadGathers(t *testing.T) {
	t.Parallel()
	addr := heraldtest.RedisAddr()
	for _, gather := range []time.Duration{0, 5 * time.Millisecond} {
		t.Run(gather.String(), func(t *testing.T) {
			t.Parallel()
			var reads readCounter
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			rdb.AddHook(&reads)
			require.NoError(t, rdb.Ping(t.Context()).Err(), "Redis must answer at %s (run `make services`)", addr)
			streams := bus.NewReportStreams(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
			key := delivery.Keys{Namespace: heraldtest.RandomName("t")}.Reports("d")
			t.Cleanup(func() { rdb.Del(context.Background(), key); _ = rdb.Close() })

			ctx, cancel := context.WithCancel(t.Context())
			out := make(chan bus.ReportEntry, 1024)
			done := make(chan struct{})
			go func() { streams.Read(ctx, key, out, func() time.Duration { return gather }); close(done) }()
			const perWorker, every = 100, 5 * time.Millisecond
			var wg sync.WaitGroup
			for w := range 2 {
				wg.Go(func() {
					start := time.Now()
					for i := range perWorker {
						time.Sleep(time.Until(start.Add(time.Duration(i) * every))) // stands for the worker's linger
						entry := delivery.ReportEntry([][]byte{fmt.Appendf(nil, `{"id":"w%d-%d"}`, w, i)})
						if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: key, Values: []string{delivery.ReportField, entry}}).Err(); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			got := map[string]bool{}
			for len(got) < 2*perWorker {
				select {
				case e := <-out:
					for _, r := range e.Reports {
						require.False(t, got[r.TaskID], "report %s read twice", r.TaskID)
						got[r.TaskID] = true
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%d of %d reports read", len(got), 2*perWorker)
				}
			}
			cancel()
			<-done
			n := reads.n.Load()
			t.Logf("gather %v: %d entries in %d XREADs (%.2f per read)", gather, 2*perWorker, n, float64(2*perWorker)/float64(n))
			if gather > 0 {
				require.Less(t, n, int64(2*perWorker*3/4), "the gather merges the two workers' entries")
			}
		})
	}
}
