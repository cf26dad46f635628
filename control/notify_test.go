package control_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
)

// TestTopicGrowthTellsGroupOwners: adding queues to a topic gives every subscribed
// group cursors on them, so the groups' owners are told (g<id>), which is how a
// dispatcher that no longer re-reads every group each second claims them at once.
func TestTopicGrowthTellsGroupOwners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	ctl := newControl(t, control.Config{Store: st, Redis: rdb, Keys: keys, Notifier: notify.New(rdb, keys), Guard: ssrf.Guard{}, BcryptCost: bcrypt.MinCost})
	actor := control.Actor{Username: "alice"}
	_, err := ctl.CreateTopic(ctx, actor, control.TopicSpec{Name: "orders", Queues: ptr(1)})
	require.NoError(t, err)
	var ids []int64
	for _, name := range []string{"billing", "audit"} {
		g, err := ctl.CreateGroup(ctx, actor, control.GroupSpec{Name: name, EndpointURL: "http://8.8.8.8/hook", Subscriptions: []models.Subscription{{Topic: "orders"}}})
		require.NoError(t, err)
		ids = append(ids, g.ID)
	}

	sctx, cancel := context.WithCancel(ctx)
	events := make(chan notify.Event, 16)
	done := make(chan struct{})
	go func() { defer close(done); notify.Subscribe(sctx, rdb, keys, events, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { // subscribed: a probe comes back
		_ = notify.New(rdb, keys).Queues(ctx, []int64{999})
		select {
		case ev := <-events:
			return ev.Queue == 999
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}, 5*time.Second, 10*time.Millisecond)
	for len(events) > 0 {
		<-events
	}

	_, err = ctl.PatchTopic(ctx, actor, "orders", control.TopicPatch{Queues: ptr(3)})
	require.NoError(t, err)
	told := map[int64]bool{}
	deadline := time.After(5 * time.Second)
	for len(told) < len(ids) {
		select {
		case ev := <-events:
			if ev.Group > 0 {
				told[ev.Group] = true
			}
		case <-deadline:
			require.Fail(t, "owners not told", "told %v of %v", told, ids)
		}
	}
	require.Equal(t, map[int64]bool{ids[0]: true, ids[1]: true}, told)
}
