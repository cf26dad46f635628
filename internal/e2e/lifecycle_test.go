package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
)

// arrivals records when each POST reached a receiver, whatever it answered.
type arrivals struct {
	mu sync.Mutex
	at []time.Time
}

func (a *arrivals) add(t time.Time) { a.mu.Lock(); a.at = append(a.at, t); a.mu.Unlock() }

func (a *arrivals) after(t time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, x := range a.at {
		if x.After(t) {
			n++
		}
	}
	return n
}

// TestDeleteGroupMidDelivery deletes a group while its backlog is being delivered
// (retries included): no POST reaches the endpoint after the answer (beyond the
// ones already on the wire), and its cursors, subscriptions, retry rows and
// dead-letter topic are gone.
func TestDeleteGroupMidDelivery(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("life", 2)
	r := heraldtest.NewReceiver(t)
	var seen arrivals
	r.Respond = func(d heraldtest.Delivery) int {
		seen.add(d.At)
		time.Sleep(10 * time.Millisecond) // latency: a slow receiver
		if strings.HasSuffix(d.ID, "7") {
			return 500 // some go to the retry topic (first retry after 1 s)
		}
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "doomed", "endpoint_url": r.URL, "max_in_flight": 2, "retry_schedule": []int{1},
		"subscriptions": []map[string]any{{"topic": "life"}}}))
	key := h.CreateAPIKey("life")
	msgs := make([]map[string]any, 400)
	for i := range msgs {
		msgs[i] = map[string]any{"body": map[string]int{"n": i}, "key": fmt.Sprint(i)}
	}
	h.Publish(key, "life", msgs...)
	require.Eventually(t, func() bool { return r.Count() >= 20 }, 15*time.Second, 5*time.Millisecond, "deliveries under way")

	var out struct {
		Group      string `json:"group"`
		Purged     bool   `json:"purged"`
		PurgeAfter string `json:"purge_after"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("DELETE", "/groups/doomed", nil, 200), &out))
	answered := time.Now()
	require.Equal(t, "doomed", out.Group)
	require.False(t, out.Purged)
	require.NotEmpty(t, out.PurgeAfter)
	delivered := r.Count()
	require.Less(t, delivered, 400, "the backlog was still being delivered")

	// Absence is only seen by waiting: long enough for the retry due after 1 s, the
	// workers' 1 s group cache and a dispatcher rebalance.
	time.Sleep(2500 * time.Millisecond)
	require.Zero(t, seen.after(answered.Add(100*time.Millisecond)), "no POST after the delete answered")
	h.Admin("GET", "/groups/doomed", nil, 404)
	ctx := context.Background()
	for _, table := range []string{"cursors", "subscriptions", "retry_messages", "consumer_groups"} {
		require.Zero(t, countRows(t, h, "SELECT COUNT(*) FROM "+table), table)
	}
	require.EqualValues(t, 1, countRows(t, h, "SELECT COUNT(*) FROM deleted_groups"), "dead letters and attempts wait out the grace period")
	require.EqualValues(t, 1, countRows(t, h, "SELECT COUNT(*) FROM audit_log WHERE subject = 'doomed' AND action = 'group.delete'"))
	_ = ctx
}

// TestDeleteGroupDLQInUse: a group whose dead-letter topic another group reads is
// not deleted (409 naming the reader); with ?purge=true a deletable one leaves no
// dead letters behind.
func TestDeleteGroupDLQInUse(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("src", 1)
	h.CreateGroup(map[string]any{"name": "a", "endpoint_url": "http://127.0.0.1:9/a", "subscriptions": []map[string]any{{"topic": "src"}}})
	_, err := h.Store.TopicCreateReserved(context.Background(), "a.dlq", 1)
	require.NoError(t, err)
	h.CreateGroup(map[string]any{"name": "auditor", "endpoint_url": "http://127.0.0.1:9/b", "subscriptions": []map[string]any{{"topic": "a.dlq"}}})
	body := h.Admin("DELETE", "/groups/a", nil, 409)
	require.Contains(t, string(body), "auditor")
	h.Admin("GET", "/groups/a", nil, 200)
	h.Admin("DELETE", "/groups/auditor?purge=true", nil, 200)
	h.Admin("DELETE", "/groups/a?purge=true", nil, 200)
	h.Admin("GET", "/topics/a.dlq", nil, 404)
	require.Zero(t, countRows(t, h, "SELECT COUNT(*) FROM deleted_groups"), "purged at once")
}

// TestDeleteTopicWithSubscribers: without force a topic with subscribers answers
// 409 naming them and nothing changes; with force the subscriptions go first, the
// answer names the groups, and the queue tables are dropped.
func TestDeleteTopicWithSubscribers(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("shared", 2)
	h.CreateTopic("other", 1)
	for _, g := range []string{"g1", "g2"} {
		h.CreateGroup(map[string]any{"name": g, "endpoint_url": "http://127.0.0.1:9/" + g,
			"subscriptions": []map[string]any{{"topic": "shared"}, {"topic": "other"}}})
	}
	key := h.CreateAPIKey("shared")
	h.Publish(key, "shared", map[string]any{"body": 1})
	before := h.Admin("GET", "/topics/shared", nil, 200)
	groupBefore := h.Admin("GET", "/groups/g1", nil, 200)

	body := h.Admin("DELETE", "/topics/shared", nil, 409)
	require.Contains(t, string(body), "g1, g2")
	require.JSONEq(t, string(before), string(h.Admin("GET", "/topics/shared", nil, 200)), "nothing changed")
	require.JSONEq(t, string(groupBefore), string(h.Admin("GET", "/groups/g1", nil, 200)))
	require.EqualValues(t, 6, countRows(t, h, "SELECT COUNT(*) FROM cursors"))

	var out struct {
		UnsubscribedGroups []string `json:"unsubscribed_groups"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("DELETE", "/topics/shared?force=true", nil, 200), &out))
	require.Equal(t, []string{"g1", "g2"}, out.UnsubscribedGroups)
	h.Admin("GET", "/topics/shared", nil, 404)
	var g struct {
		Subscriptions []struct{ Topic string } `json:"subscriptions"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/g1", nil, 200), &g))
	require.Len(t, g.Subscriptions, 1)
	require.Equal(t, "other", g.Subscriptions[0].Topic)
	require.EqualValues(t, 2, countRows(t, h, "SELECT COUNT(*) FROM cursors"), "only the other topic's cursors are left")
	require.EqualValues(t, 1, countRows(t, h, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME REGEXP '^queue_[0-9]+$'"),
		"the topic's queue tables are dropped")
}

// countRows runs a COUNT query on h's database.
func countRows(t *testing.T, h *heraldtest.Herald, q string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, h.Store.DB().QueryRow(q).Scan(&n))
	return n
}

// asynqQueueKey reports whether k is one of asynq's structures for the namespace's
// asynq queue (pending, active, lease, scheduled, … lists and sets), which live as
// long as the installation does.
func asynqQueueKey(keys delivery.Keys, k string) bool {
	return strings.HasPrefix(k, "asynq:{"+keys.AsynqQueue()+"}")
}

// TestRedisKeysAfterDispatcherDies kills a dispatcher process (no shutdown path)
// while a worker still owes it a report, lets its lease expire, and lists the
// namespace: every key has a TTL, belongs to asynq's queue or is a live group's
// fence; after the group is deleted its fence hash goes too.
func TestRedisKeysAfterDispatcherDies(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Worker: true, Maintenance: true}, func(c *config.Config) {
		c.Maintenance.HygieneInterval = 200 * time.Millisecond
		c.Maintenance.RenewInterval = 100 * time.Millisecond
	})
	h.CreateTopic("keys", 1)
	r := heraldtest.NewReceiver(t)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	r.Respond = func(heraldtest.Delivery) int {
		once.Do(func() { arrived <- struct{}{}; <-release })
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "k", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "keys"}}}))
	key := h.CreateAPIKey("keys")
	disp := startRoleProcess(t, h, "dispatcher")
	h.Publish(key, "keys", map[string]any{"body": 1})
	select {
	case <-arrived:
	case <-time.After(15 * time.Second):
		t.Fatal("the POST never arrived")
	}
	require.NoError(t, disp.Process.Signal(syscall.SIGKILL))
	_ = disp.Wait()
	close(release) // the worker now reports to the dead dispatcher's stream
	ctx := context.Background()
	keys := delivery.Keys{Namespace: h.Cfg.Namespace}
	require.Eventually(t, func() bool {
		live, err := h.Store.Cursors().DispatchersLive(ctx)
		return err == nil && len(live) == 0
	}, 15*time.Second, 50*time.Millisecond, "the dead dispatcher's lease expires")

	groupID := countRows(t, h, "SELECT id FROM consumer_groups WHERE name = 'k'")
	orphans := func() []string {
		var out []string
		for _, pat := range keys.Patterns() {
			iter := h.Redis.Scan(ctx, 0, pat, 1000).Iterator()
			for iter.Next(ctx) {
				k := iter.Val()
				if asynqQueueKey(keys, k) && !strings.Contains(k, ":t:") {
					continue
				}
				if k == keys.Fence(groupID) {
					continue // a live group's fence
				}
				if ttl, err := h.Redis.PTTL(ctx, k).Result(); err == nil && ttl > 0 {
					continue
				}
				out = append(out, k)
			}
		}
		return out
	}
	var left []string
	require.Eventually(t, func() bool { left = orphans(); return len(left) == 0 }, 10*time.Second, 50*time.Millisecond, "orphaned keys: %v", &left)
	require.Empty(t, left)

	h.Admin("DELETE", "/groups/k", nil, 200)
	require.Eventually(t, func() bool { return h.Redis.Exists(ctx, keys.Fence(groupID)).Val() == 0 }, 10*time.Second, 50*time.Millisecond,
		"a deleted group's fence hash is removed")
	require.Empty(t, orphans())
}
