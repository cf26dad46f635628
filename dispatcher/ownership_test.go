package dispatcher_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/go-sql-driver/mysql.(*mysqlConn).startWatcher.func1"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// ownBundle is one test's database, Redis namespace and topic, with a statement
// counter in front of the database for the dispatchers it starts.
type ownBundle struct {
	dsn     string
	st      *store.Store // the test's own connection, not counted
	rdb     *redis.Client
	keys    delivery.Keys
	notify  *notify.Notifier
	counter *heraldtest.SQLCounter
	cfg     config.Dispatcher
}

func setupOwn(t *testing.T) *ownBundle {
	t.Helper()
	dsn, st := heraldtest.Database(t)
	rdb, ns := heraldtest.Redis(t)
	keys := delivery.Keys{Namespace: ns}
	cfg := heraldtest.TestConfig(dsn, ns).Dispatcher
	cfg.RebalanceInterval = time.Hour // only notifications and leases act, unless a test says otherwise
	b := &ownBundle{dsn: dsn, st: st, rdb: rdb, keys: keys, notify: notify.New(rdb, keys), counter: heraldtest.NewSQLCounter(t, dsn), cfg: cfg}
	_, err := st.TopicCreate(context.Background(), "t", 4)
	require.NoError(t, err)
	return b
}

// group creates a running group subscribed to topic t (4 cursors) and returns its id;
// nobody is told.
func (b *ownBundle) group(t *testing.T, name string) int64 {
	t.Helper()
	g := &models.Group{Name: name, EndpointURL: "http://127.0.0.1:1/hook", SigningSecret: signing.NewSecret(),
		Status: models.GroupRunning, Subscriptions: []models.Subscription{{Topic: "t"}}}
	g.ApplyDefaults()
	require.NoError(t, b.st.GroupCreate(context.Background(), g))
	return g.ID
}

// start runs a dispatcher with cfg on its own counted connection until stop is
// called or the test ends.
func (b *ownBundle) start(t *testing.T, cfg config.Dispatcher) (d *dispatcher.Dispatcher, stop func()) {
	t.Helper()
	st, err := store.Open(context.Background(), b.counter.ProxiedDSN(t, b.dsn))
	require.NoError(t, err)
	st.SetPoolSize(4)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err = dispatcher.New(dispatcher.Deps{Config: cfg, Keys: b.keys, Store: st, Redis: b.rdb, Jobs: bus.NewRedisJobs(b.rdb, asynq.RedisClientOpt{Addr: heraldtest.RedisAddr()}, b.keys, log, nil), Log: log})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(15 * time.Second):
				t.Error("dispatcher did not stop within 15 s")
			}
			st.Close()
		})
	}
	t.Cleanup(stop)
	return d, stop
}

// owners counts cursors by owner ("" for none).
func (b *ownBundle) owners(t *testing.T) map[string]int {
	t.Helper()
	rows, err := b.st.DB().Query("SELECT owner, COUNT(*) FROM cursors GROUP BY owner")
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var o string
		var n int
		require.NoError(t, rows.Scan(&o, &n))
		out[o] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// waitOwned waits until owner holds exactly n cursors, and returns how long it took.
func (b *ownBundle) waitOwned(t *testing.T, owner string, n int, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	require.Eventually(t, func() bool { return b.owners(t)[owner] == n }, within, 10*time.Millisecond,
		"%s never held %d cursors (owners %v)", owner, n, b.owners(t))
	return time.Since(start)
}

// TestIdleDispatcherStatements: a dispatcher owning 50 idle groups (200 cursors) with
// nothing published costs its heartbeats and the idle MAX(id) poll, and nothing
// per group or cursor: no re-read of groups, cursors or versions every heartbeat.
func TestIdleDispatcherStatements(t *testing.T) {
	t.Parallel()
	b := setupOwn(t)
	for i := range 50 {
		b.group(t, fmt.Sprintf("g%02d", i))
	}
	d, _ := b.start(t, b.cfg)
	b.waitOwned(t, d.ID(), 200, 20*time.Second)
	time.Sleep(time.Second) // the claims' follow-ups (retry due times, first backlog sample)
	const window = 4 * time.Second
	from := time.Now()
	time.Sleep(window) // absence: the measured window of an idle owner's statements
	stmts := b.counter.Since(from)
	var text []string
	for _, s := range stmts {
		text = append(text, s.SQL[:min(len(s.SQL), 60)])
		require.NotContains(t, s.SQL, "consumer_groups", "groups re-read while idle")
		require.False(t, strings.Contains(s.SQL, "FROM `cursors`") || strings.Contains(s.SQL, "FROM cursors"), "cursors re-read while idle: %s", s.SQL)
	}
	beats := int(window / b.cfg.HeartbeatInterval)
	polls := int(window / b.cfg.IdlePollInterval)
	require.LessOrEqual(t, len(stmts), beats+polls+2, "statements in %s: %q", window, text)
}

// TestGroupNotificationApplied: with the sweep an hour away, a group notification is
// applied within a second: a new group is claimed, a new subscription's cursors too,
// and an offset reset is picked up (the cursor is claimed again at a newer version).
func TestGroupNotificationApplied(t *testing.T) {
	t.Parallel()
	b := setupOwn(t)
	ctx := context.Background()
	b.group(t, "first")
	d, _ := b.start(t, b.cfg)
	b.waitOwned(t, d.ID(), 4, 10*time.Second)

	id := b.group(t, "second")
	require.NoError(t, b.notify.Group(ctx, id))
	took := b.waitOwned(t, d.ID(), 8, 5*time.Second)
	require.Less(t, took, time.Second, "new group claimed after %s", took)

	_, err := b.st.TopicCreate(ctx, "u", 2)
	require.NoError(t, err)
	g, err := b.st.GroupGetByID(ctx, id)
	require.NoError(t, err)
	g.Subscriptions = append(g.Subscriptions, models.Subscription{Topic: "u"})
	require.NoError(t, b.st.GroupUpdate(ctx, g))
	require.NoError(t, b.notify.Group(ctx, id))
	took = b.waitOwned(t, d.ID(), 10, 5*time.Second)
	require.Less(t, took, time.Second, "new subscription's cursors claimed after %s", took)

	reset, err := b.st.Cursors().CursorsReset(ctx, id, models.ConsumeEarliest, nil)
	require.NoError(t, err)
	require.NoError(t, b.notify.Group(ctx, id))
	start := time.Now()
	require.Eventually(t, func() bool {
		cs, err := b.st.Cursors().CursorsByGroups(ctx, []int64{id})
		require.NoError(t, err)
		for _, c := range cs {
			for _, r := range reset {
				if r.CursorID == c.ID && (c.Version <= r.Version || c.Owner != d.ID()) {
					return false
				}
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "the reset cursors were never claimed again")
	require.Less(t, time.Since(start), time.Second)
}

// TestLostGroupNotificationSwept: a group created without a notification is claimed
// at the next sweep.
func TestLostGroupNotificationSwept(t *testing.T) {
	t.Parallel()
	b := setupOwn(t)
	cfg := b.cfg
	cfg.RebalanceInterval = 2 * time.Second
	d, _ := b.start(t, cfg)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.st.DB().QueryRow("SELECT COUNT(*) FROM dispatchers WHERE id = ?", d.ID()).Scan(&n))
		return n == 1
	}, 5*time.Second, 10*time.Millisecond)
	b.group(t, "unannounced")
	took := b.waitOwned(t, d.ID(), 4, 10*time.Second)
	require.Less(t, took, cfg.RebalanceInterval+time.Second, "claimed after %s", took)
}

// TestJoinAndLeaveRebalance: with the sweep an hour away, a second dispatcher that
// joins gets its share of the groups within seconds (its announcement makes the
// first release them, and the release tells it), and when it stops the first owns
// every cursor again within a second.
func TestJoinAndLeaveRebalance(t *testing.T) {
	t.Parallel()
	b := setupOwn(t)
	for i := range 20 {
		b.group(t, fmt.Sprintf("g%02d", i))
	}
	a, _ := b.start(t, b.cfg)
	b.waitOwned(t, a.ID(), 80, 20*time.Second)

	c, stopC := b.start(t, b.cfg)
	require.Eventually(t, func() bool {
		o := b.owners(t)
		return o[c.ID()] > 0 && o[a.ID()]+o[c.ID()] == 80
	}, 5*time.Second, 10*time.Millisecond, "the joiner never got its share (owners %v)", b.owners(t))
	t.Logf("after the join: %v", b.owners(t))

	stopC()
	took := b.waitOwned(t, a.ID(), 80, 5*time.Second)
	require.Less(t, took, time.Second, "the leaver's groups claimed after %s", took)
}

// TestExpiredPeerTakenOver: a peer that stops heartbeating (as after kill -9) loses
// its share when its lease ends, not at the sweep: the survivor reads the live set
// again exactly then.
func TestExpiredPeerTakenOver(t *testing.T) {
	t.Parallel()
	b := setupOwn(t)
	ctx := context.Background()
	for i := range 20 {
		b.group(t, fmt.Sprintf("g%02d", i))
	}
	const peer = "peer-that-dies"
	beat := func() {
		require.NoError(t, b.st.Cursors().DispatcherHeartbeat(ctx, peer, "test", b.cfg.LeaseDuration))
	}
	beat()
	beating, stopBeating := context.WithCancel(ctx)
	beaten := make(chan struct{})
	go func() {
		defer close(beaten)
		tick := time.NewTicker(b.cfg.HeartbeatInterval)
		defer tick.Stop()
		for {
			select {
			case <-beating.Done():
				return
			case <-tick.C:
				beat()
			}
		}
	}()
	d, _ := b.start(t, b.cfg)
	require.Eventually(t, func() bool {
		o := b.owners(t)
		return o[d.ID()] > 0 && o[d.ID()] < 80
	}, 10*time.Second, 10*time.Millisecond, "the survivor claimed no share (owners %v)", b.owners(t))
	time.Sleep(2 * b.cfg.LeaseDuration) // the peer's share stays unclaimed while it renews
	require.Less(t, b.owners(t)[d.ID()], 80, "claimed groups of a live peer")

	stopBeating()
	<-beaten
	died := time.Now()
	b.waitOwned(t, d.ID(), 80, 10*time.Second)
	took := time.Since(died)
	t.Logf("peer's share claimed %s after its last heartbeat", took.Round(time.Millisecond))
	require.Less(t, took, b.cfg.LeaseDuration+time.Second)
}
