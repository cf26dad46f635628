package control_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestPatchGroupChangesOnlyItsFields: concurrent patches of different fields all
// land (each is applied to the group as it is when written), and a patch leaves
// every field it does not set as it was, however it was created.
func TestPatchGroupChangesOnlyItsFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.ctl.CreateTopic(b.ctx, b.actor, control.TopicSpec{Name: "orders", Queues: ptr(1)})
	require.NoError(t, err)
	_, err = b.ctl.CreateGroup(b.ctx, b.actor, control.GroupSpec{Name: "billing", EndpointURL: "http://8.8.8.8/hook",
		Subscriptions: []models.Subscription{{Topic: "orders"}}, DeadLetterRetentionHours: ptr(48), BatchMaxBytes: ptr(4096),
		ConsumeFrom: models.ConsumeEarliest, EndpointHeaders: map[string]string{"x-team": "billing"}})
	require.NoError(t, err)

	patches := []control.GroupPatch{{RateLimit: ptr(25)}, {MaxAttempts: ptr(3)}, {TimeoutMS: ptr(2500)},
		{BatchSize: ptr(5)}, {MaxInFlight: ptr(4)}, {BatchWindowMS: ptr(100)}}
	var wg sync.WaitGroup
	for _, p := range patches {
		wg.Go(func() {
			_, _, err := b.ctl.PatchGroup(b.ctx, b.actor, "billing", p)
			require.NoError(t, err)
		})
	}
	wg.Wait()
	g, err := b.ctl.GetGroup(b.ctx, "billing")
	require.NoError(t, err)
	require.Equal(t, []int{25, 3, 2500, 5, 4, 100}, []int{g.RateLimit, g.MaxAttempts, g.TimeoutMS, g.BatchSize, g.MaxInFlight, g.BatchWindowMS},
		"no concurrent patch overwrote another")
	require.Equal(t, 48, g.DeadLetterRetentionHours, "fields no patch set keep their values")
	require.Equal(t, 4096, g.BatchMaxBytes)
	require.Equal(t, models.ConsumeEarliest, g.ConsumeFrom)
	require.Equal(t, map[string]string{"x-team": "billing"}, g.EndpointAuth.Headers)

	es, err := b.st.AuditList(b.ctx, store.AuditFilter{Action: "group.update"}, 0, 100)
	require.NoError(t, err)
	require.Len(t, es, len(patches), "each patch is audited once")
}

// TestPatchGroupEmptyRetryScheduleIsTheDefault: an empty retry schedule, like
// null, means the default schedule, as the API documents; it is never stored
// empty (a group with no schedule would show [] and retry on a schedule it
// does not show).
func TestPatchGroupEmptyRetryScheduleIsTheDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.ctl.CreateTopic(b.ctx, b.actor, control.TopicSpec{Name: "orders", Queues: ptr(1)})
	require.NoError(t, err)
	_, err = b.ctl.CreateGroup(b.ctx, b.actor, control.GroupSpec{Name: "billing", EndpointURL: "http://8.8.8.8/hook",
		Subscriptions: []models.Subscription{{Topic: "orders"}}, RetrySchedule: []int{1, 2}})
	require.NoError(t, err)
	_, _, err = b.ctl.PatchGroup(b.ctx, b.actor, "billing", control.GroupPatch{RetrySchedule: &[]int{}})
	require.NoError(t, err)
	g, err := b.ctl.GetGroup(b.ctx, "billing")
	require.NoError(t, err)
	require.Equal(t, models.DefaultRetrySchedule, g.RetrySchedule)
}
