package maintenance_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/maintenance"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/go-sql-driver/mysql.(*mysqlConn).startWatcher.func1"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// bundle is one test's database, Redis namespace and maintenance settings.
type bundle struct {
	dsn  string
	st   *store.Store
	rdb  *redis.Client
	keys delivery.Keys
	cfg  config.Maintenance
}

func setup(t *testing.T) bundle {
	t.Helper()
	dsn, st := heraldtest.Database(t)
	rdb, ns := heraldtest.Redis(t)
	cfg := config.Maintenance{LeaseDuration: 2 * time.Second, RenewInterval: 100 * time.Millisecond,
		OutboxInterval: time.Hour, LagInterval: time.Hour, AttemptRetention: 168 * time.Hour}
	return bundle{dsn: dsn, st: st, rdb: rdb, keys: delivery.Keys{Namespace: ns}, cfg: cfg}
}

// start runs a Maintainer until the returned stop is called (or the test ends).
func (b bundle) start(t *testing.T) (*maintenance.Maintainer, func()) {
	t.Helper()
	m := maintenance.New(b.cfg, b.keys, b.st.Sides(), b.rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	m.TestSignals.Init()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("maintainer did not stop within 10 s")
		}
	}
	t.Cleanup(stop)
	return m, stop
}

// TestLeaseOneHolder: of two maintainers on one database exactly one works; when it
// stops it releases the lease and the other takes over at its next renewal, long
// before the lease would have expired.
func TestLeaseOneHolder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.LeaseDuration = time.Minute // a takeover within seconds proves the release
	var ms [2]*maintenance.Maintainer
	var stops [2]func()
	for i := range ms {
		ms[i], stops[i] = b.start(t)
	}
	require.Eventually(t, func() bool { return ms[0].Leader() != ms[1].Leader() }, 5*time.Second, 10*time.Millisecond)
	l := 0
	if ms[1].Leader() {
		l = 1
	}
	holder, _, err := b.st.MaintenanceLeaseHolder(context.Background(), maintenance.LeaseName)
	require.NoError(t, err)
	require.Equal(t, ms[l].ID(), holder)
	for range 5 { // renewals keep the same holder
		time.Sleep(b.cfg.RenewInterval) // absence: renewals across a renew interval leave the holder unchanged
		require.True(t, ms[l].Leader())
		require.False(t, ms[1-l].Leader())
	}
	stops[l]()
	require.False(t, ms[l].Leader())
	require.Eventually(t, ms[1-l].Leader, 5*time.Second, 10*time.Millisecond, "the lease moves on release, not after a minute")
}

// TestLeaseExpiry: a holder that stops renewing (crashed) loses the lease once it
// expires in database time, and another holder may take it then, not before.
func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ok, err := b.st.MaintenanceLeaseTake(ctx, "test", "a", time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = b.st.MaintenanceLeaseTake(ctx, "test", "b", time.Second)
	require.NoError(t, err)
	require.False(t, ok, "a live lease of another holder is left alone")
	ok, err = b.st.MaintenanceLeaseTake(ctx, "test", "a", time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the holder renews")
	require.Eventually(t, func() bool {
		ok, err := b.st.MaintenanceLeaseTake(ctx, "test", "b", time.Second)
		require.NoError(t, err)
		return ok
	}, 5*time.Second, 50*time.Millisecond)
	holder, _, err := b.st.MaintenanceLeaseHolder(ctx, "test")
	require.NoError(t, err)
	require.Equal(t, "b", holder)
}

// TestOutboxOnWake: a dispatcher's DeadLetters notification runs the outbox at once
// (its interval here is an hour), which appends the dead letter to `<group>.dlq` and
// notifies that topic's queue so dispatchers read it.
func TestOutboxOnWake(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	topic, err := b.st.TopicCreate(ctx, "orders", 1)
	require.NoError(t, err)
	g := &models.Group{Name: "billing", EndpointURL: "http://127.0.0.1:9/hook", SigningSecret: signing.NewSecret(),
		Subscriptions: []models.Subscription{{Topic: "orders"}}}
	g.ApplyDefaults()
	require.NoError(t, b.st.GroupCreate(ctx, g))

	sub := b.rdb.Subscribe(ctx, b.keys.NotifyChannel())
	defer sub.Close()
	_, err = sub.Receive(ctx)
	require.NoError(t, err)
	notes := sub.Channel()
	m, _ := b.start(t)
	require.Eventually(t, func() bool {
		n, err := b.rdb.PubSubNumSub(ctx, b.keys.NotifyChannel()).Result()
		return err == nil && n[b.keys.NotifyChannel()] == 2 && m.Leader()
	}, 5*time.Second, 10*time.Millisecond, "the maintainer leads and listens")

	q := topic.Queues[0].ID
	req := &store.PublishRequest{Messages: []models.Message{{QueueID: q, Body: []byte(`{"n":1}`), ContentType: "application/json", CreatedAt: time.Now().UnixMilli()}}}
	require.NoError(t, b.st.Queues().MessagesInsert(ctx, []*store.PublishRequest{req}))
	out, err := b.st.RetryRecord(ctx, g.ID, 1, nil, []store.Failure{{QueueID: q, Offset: req.Messages[0].Offset, Attempt: 1, LastStatus: 500, LastError: "boom"}})
	require.NoError(t, err)
	require.Len(t, out.DeadLettered, 1)
	woke := time.Now()
	require.NoError(t, notify.New(b.rdb, b.keys).DeadLetters(ctx))

	var dlqQueue string
	require.Eventually(t, func() bool {
		dlq, err := b.st.TopicGetByName(ctx, "billing.dlq")
		if err != nil {
			return false
		}
		dlqQueue = strconv.FormatInt(dlq.Queues[0].ID, 10)
		return true
	}, 5*time.Second, 10*time.Millisecond, "the outbox creates and fills billing.dlq")
	timeout := time.After(5 * time.Second)
	for {
		select {
		case n := <-notes:
			if n.Payload == dlqQueue {
				dls, err := b.st.DeadLetterList(ctx, store.DeadLetterFilter{GroupID: g.ID}, 0, 10)
				require.NoError(t, err)
				require.Len(t, dls, 1)
				require.NotNil(t, dls[0].DLQOffset)
				t.Logf("wake-up to dead-letter queue notification: %v", time.Since(woke))
				return
			}
		case <-timeout:
			t.Fatal("no notification for the dead-letter queue")
		}
	}
}

// TestIdleLeaderStatements: the duties a leader runs on taking the lease cost a
// fixed number of statements whatever the number of groups (no dead-letter expiry
// DELETE per group when nothing expired, no lag row written for a lag of 0), and
// holding the lease costs one UPDATE per renewal.
func TestIdleLeaderStatements(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.st.TopicCreate(ctx, "orders", 2)
	require.NoError(t, err)
	for i := range 30 {
		g := &models.Group{Name: fmt.Sprintf("g%02d", i), EndpointURL: "http://127.0.0.1:9/hook", SigningSecret: signing.NewSecret(),
			Subscriptions: []models.Subscription{{Topic: "orders"}}}
		g.ApplyDefaults()
		require.NoError(t, b.st.GroupCreate(ctx, g))
	}
	counter := heraldtest.NewSQLCounter(t, b.dsn)
	st, err := store.Open(ctx, counter.ProxiedDSN(t, b.dsn))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	st.SetPoolSize(2)
	b.st = st
	start := time.Now()
	m, _ := b.start(t)
	require.Eventually(t, m.Leader, 5*time.Second, 10*time.Millisecond)
	waitDuties(t, m, maintenance.Duties()...) // the duties run once on taking the lease
	taken := counter.Since(start)
	var text []string
	for _, s := range taken {
		text = append(text, s.SQL[:min(len(s.SQL), 50)])
		require.NotContains(t, s.SQL, "DELETE FROM dead_letters", "expiry with nothing expired")
		require.NotContains(t, s.SQL, "INSERT INTO stats_minutely", "a lag of 0 sampled")
	}
	require.Less(t, len(taken), 30, "statements of the first run: %q", text)

	from := time.Now()
	time.Sleep(10 * b.cfg.RenewInterval) // absence: a held lease issues no duty statement in ten renew intervals
	held := counter.Since(from)
	for _, s := range held {
		require.True(t, strings.HasPrefix(s.SQL, "UPDATE maintenance_leases"), "only renewals while idle: %s", s.SQL)
	}
	require.LessOrEqual(t, len(held), 11)
}

// waitDuties waits until each of duties ran once more (in any order).
func waitDuties(t *testing.T, m *maintenance.Maintainer, duties ...maintenance.Duty) {
	t.Helper()
	want := map[maintenance.Duty]int{}
	for _, d := range duties {
		want[d]++
	}
	for len(want) > 0 {
		d := m.TestSignals.DutyRan.WaitFor(t, 10*time.Second, func(d maintenance.Duty) bool { return want[d] > 0 })
		if want[d]--; want[d] == 0 {
			delete(want, d)
		}
	}
}
