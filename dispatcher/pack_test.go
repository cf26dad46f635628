package dispatcher

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
)

// TestCutPacksJobsOfOneStep: the jobs one cut makes for several groups travel as one
// asynq task, each keeping its own TaskID, and each job's state names that task, so
// the deadline check asks asynq about the task that carries it; a step that cuts one
// job sends it alone under its own TaskID; a pack that cannot be enqueued releases
// every job in it.
func TestCutPacksJobsOfOneStep(t *testing.T) {
	t.Parallel()
	b := setupCut(t, 16, 10)
	g1, g2 := b.group(10, 1, 3), b.group(10, 1, 2)
	b.d.cut(context.Background())
	require.Equal(t, []int{2}, b.q.tasks, "two groups' jobs, one task")
	require.Len(t, b.q.jobs, 2)
	require.NotEqual(t, b.q.jobs[0].TaskID(), b.q.jobs[1].TaskID())
	pack := delivery.PackTaskID(b.q.jobs[0].TaskID(), 2)
	for _, j := range b.q.jobs {
		js := b.d.jobs[j.TaskID()]
		require.NotNil(t, js, "job %s tracked under its own id", j.TaskID())
		require.Equal(t, pack, js.taskID())
	}
	require.Empty(t, b.d.packing)

	b2 := setupCut(t, 16, 10)
	b2.group(10, 1, 3)
	b2.d.cut(context.Background())
	require.Equal(t, []int{1}, b2.q.tasks)
	js := b2.d.jobs[b2.q.jobs[0].TaskID()]
	require.Equal(t, b2.q.jobs[0].TaskID(), js.taskID(), "a lone job is its own task")

	b3 := setupCut(t, 16, 10)
	b3.q.err = errors.New("redis down")
	h1, h2 := b3.group(10, 1, 3), b3.group(10, 1, 2)
	b3.d.cut(context.Background())
	require.Empty(t, b3.d.jobs, "a failed pack releases its jobs")
	for _, gs := range []*groupState{h1, h2} {
		require.Zero(t, gs.inflightP, "credits back")
		require.Zero(t, gs.cursors[0].jobs)
		require.Empty(t, gs.cursors[0].inflight)
		require.NotEmpty(t, gs.cursors[0].pending, "messages due again")
	}
	require.Equal(t, 3, g1.inflightP)
	require.Equal(t, 2, g2.inflightP)
}
