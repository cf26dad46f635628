package bus

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLeaseLapsesWithTheWorkersAnnounces: a pushed job may be sent while the
// worker's announces go through; once none went through for LeaseLimit it is
// lapsed, and stays lapsed after announces resume (the dispatchers may have sent
// it elsewhere meanwhile), while a job taken after that is sent.
func TestLeaseLapsesWithTheWorkersAnnounces(t *testing.T) {
	t.Parallel()
	var now time.Duration
	l := &lease{clock: func() time.Duration { return now }}
	l.renew()
	before := withHold(context.Background(), l.take())
	require.False(t, Lapsed(before))
	now += WorkerRefresh
	l.renew()
	now += LeaseLimit - time.Millisecond
	require.False(t, Lapsed(before), "announces went through within the limit")
	now += time.Millisecond
	require.True(t, Lapsed(before), "no announce for LeaseLimit: dispatchers may count the worker dead")
	now += 10 * time.Second // stopped, then running again
	l.renew()
	require.True(t, Lapsed(before), "a job held across the stop stays lapsed")
	waited := withHold(context.Background(), l.take())
	require.True(t, Lapsed(waited), "a push read just after the stop may have waited through it")
	now += leaseQuarantine
	after := withHold(context.Background(), l.take())
	require.False(t, Lapsed(after), "a job taken after the stop is sent")
	require.True(t, Lapsed(waited))
	require.False(t, Lapsed(context.Background()), "no lease: in process, or not pushed")
}
