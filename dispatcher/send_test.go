package dispatcher

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCutSendsOneStepAtOnce: the jobs one cut makes for several groups reach the
// bus in one Flush, each under its own TaskID and tracked under it; a Flush that
// refuses them releases every job: credits back, messages due again.
func TestCutSendsOneStepAtOnce(t *testing.T) {
	t.Parallel()
	b := setupCut(t, 16, 10)
	b.group(10, 1, 3)
	b.group(10, 1, 2)
	b.d.cut(context.Background())
	require.Equal(t, []int{2}, b.q.sends, "two groups' jobs, one flush")
	require.Len(t, b.q.jobs, 2)
	require.NotEqual(t, b.q.jobs[0].TaskID(), b.q.jobs[1].TaskID())
	for _, j := range b.q.jobs {
		require.NotNil(t, b.d.jobs[j.TaskID()], "job %s tracked under its own id", j.TaskID())
	}
	require.Empty(t, b.q.held)

	b3 := setupCut(t, 16, 10)
	b3.q.err = errors.New("redis down")
	h1, h2 := b3.group(10, 1, 3), b3.group(10, 1, 2)
	b3.d.cut(context.Background())
	require.Empty(t, b3.d.jobs, "a refused send releases its jobs")
	for _, gs := range []*groupState{h1, h2} {
		require.Zero(t, gs.inflightP, "credits back")
		require.Zero(t, gs.cursors[0].jobs)
		require.Empty(t, gs.cursors[0].inflight)
		require.NotEmpty(t, gs.cursors[0].pending, "messages due again")
	}
}
