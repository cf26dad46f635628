package dispatcher

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

// TestRetryLeaseCoversDeadline: a retry claim leases its rows at least as long as the
// deadline of any job cut from them, so no row comes due again (and is claimed and
// sent a second time) while its job may still POST. A rate-limited group needs the
// rate's time in the lease too.
func TestRetryLeaseCoversDeadline(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                   string
		batch, rate, timeoutMS int
		maxInFlight, retries   int
	}{
		{name: "unlimited, one message a POST", batch: 1, timeoutMS: 1000, maxInFlight: 10, retries: 5},
		{name: "unlimited, full batches", batch: 5, timeoutMS: 1000, maxInFlight: 1, retries: 10},
		{name: "rate-limited, short timeout", batch: 10, rate: 10, timeoutMS: 100, maxInFlight: 1, retries: 10},
		{name: "rate-limited, one message a POST", batch: 1, rate: 20, timeoutMS: 50, maxInFlight: 1, retries: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupCut(t, 16, 100)
			gs := b.group(tc.maxInFlight, tc.batch)
			gs.g.RateLimit, gs.g.TimeoutMS = tc.rate, tc.timeoutMS
			gs.pace = newPacer(tc.rate, tc.batch, b.now)
			for i := range tc.retries {
				b.st.retries = append(b.st.retries, models.RetryMessage{GroupID: gs.g.ID, QueueID: 1, Offset: int64(1 + i), Attempt: 2})
			}
			b.d.cut(context.Background())
			require.NotEmpty(t, b.q.jobs)
			require.Len(t, b.st.leases, 1)
			for _, js := range b.d.jobs {
				require.LessOrEqual(t, js.deadline.Sub(b.now), b.st.leases[0], "job %s", js.job.TaskID())
				require.True(t, js.leaseEnd.Equal(b.now.Add(b.st.leases[0])))
			}
		})
	}
}

// TestRetryEnqueueFails: a retry job asynq refuses gives its credits back and asks for the retry topic to be looked at again when its claim lease
// ends (the rows are due again then).
func TestRetryEnqueueFails(t *testing.T) {
	t.Parallel()
	b := setupCut(t, 16, 10)
	b.q.err = errors.New("redis down")
	gs := b.group(10, 1)
	for i := range 3 {
		b.st.retries = append(b.st.retries, models.RetryMessage{GroupID: gs.g.ID, QueueID: 1, Offset: int64(1 + i), Attempt: 2})
	}
	gs.health.nextRetry = time.Time{}
	b.d.cut(context.Background())
	require.Empty(t, b.d.jobs)
	require.Zero(t, gs.inflightP)
	require.Len(t, b.st.leases, 1)
	require.False(t, gs.health.nextRetry.After(b.now.Add(b.st.leases[0])), "next retry %v", gs.health.nextRetry)
}
