// Package maintenance is Herald's maintenance role: the background work that must
// run once per deployment, not once per replica — the dead-letter outbox, lag
// sampling and pruning of the per-minute rollups, the hourly partition DDL of the
// delivery-attempt log, topic retention (retention.go), dead-letter expiry, the
// purge of deleted groups' rows, and Redis hygiene (hygiene.go). Every process that runs the role competes for one lease
// in MySQL (maintenance_leases, database time, like the dispatchers' leases); the
// holder does the work, the others only retry the lease. The model is river's
// maintenance services, run by its elected leader.
//
// Run's loop is one goroutine; the notify subscriber feeds it through a channel.
package maintenance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// LeaseName is the maintenance_leases row the role's processes compete for.
const LeaseName = "maintenance"

// hourly is how often stats pruning and the attempt partitions run.
const hourly = time.Hour

// Maintainer is one process's maintenance role. Create it with New and start it
// with Run; it works only while it holds the lease.
type Maintainer struct {
	cfg      config.Maintenance
	st       Store
	rdb      redis.UniversalClient
	keys     delivery.Keys
	notifier *notify.Notifier
	log      *slog.Logger
	id       string
	now      func() time.Time

	leaderUntil    atomic.Int64 // local Unix ns until which the lease is surely ours; 0 = not leader
	outboxAgain    bool         // the last outbox run filled its batch
	retentionAgain bool         // the last retention run stopped at its budget
	retentionNext  int          // index of the queue the next retention run starts at
	// retentionSeries maps each queue this process exported retention series for to
	// its topic (retention_series.go).
	retentionSeries map[int64]string
	// nodesSeen is each db node's health as the last node event reported it
	// (node_events.go); nil while not leader.
	nodesSeen map[int64]models.NodeHealth

	// TestSignals are for tests only; see Init.
	TestSignals TestSignals
}

// New returns a Maintainer with a fresh random holder id that works on st (a
// *store.Store, or anything with its maintenance methods) and rdb.
func New(cfg config.Maintenance, keys delivery.Keys, st Store, rdb redis.UniversalClient, log *slog.Logger) *Maintainer {
	cfg = withDefaults(cfg)
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &Maintainer{cfg: cfg, st: st, rdb: rdb, keys: keys, notifier: notify.New(rdb, keys), log: log,
		id: fmt.Sprintf("%s-%s", host, hex.EncodeToString(b[:])), now: time.Now}
}

// ID is this process's holder id in maintenance_leases.
func (m *Maintainer) ID() string { return m.id }

// Leader reports whether this process holds the maintenance lease now (by its own
// clock, with the lease shortened by the time the renewal took). Safe for
// concurrent use.
func (m *Maintainer) Leader() bool { return m.now().UnixNano() < m.leaderUntil.Load() }

// Run competes for the lease and, while it holds it, runs the duties until ctx
// ends. Shutdown order: the duty in progress stops with ctx (each outbox append is
// its own transaction, so nothing is left half-done), the lease is released so
// another process takes over at its next renewal instead of after expiry, then the
// notify subscriber ends. It returns nil on cancellation; MySQL and Redis errors are
// logged and retried, never returned.
func (m *Maintainer) Run(ctx context.Context) error {
	events := make(chan notify.Event, 64)
	subDone := make(chan struct{})
	subCtx, stopSub := context.WithCancel(ctx)
	go func() { defer close(subDone); m.subscribe(subCtx, events) }()
	defer func() { stopSub(); <-subDone }()
	renew := time.NewTicker(m.cfg.RenewInterval)
	defer renew.Stop()
	outbox := time.NewTicker(m.cfg.OutboxInterval)
	defer outbox.Stop()
	lag := time.NewTicker(m.cfg.LagInterval)
	defer lag.Stop()
	hour := time.NewTicker(hourly)
	defer hour.Stop()
	retention := time.NewTicker(m.cfg.RetentionInterval)
	defer retention.Stop()
	hygiene := time.NewTicker(m.cfg.HygieneInterval)
	defer hygiene.Stop()
	nodes := time.NewTicker(store.NodeProbeInterval)
	defer nodes.Stop()
	delayed := time.NewTimer(0) // a pass as soon as the lease is taken
	defer delayed.Stop()
	delayedAt := m.now()
	defer m.release()
	m.renew(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-renew.C:
			m.renew(ctx)
		case <-outbox.C:
			m.runOutbox(ctx)
			m.runMoves(ctx)
		case ev := <-events:
			if ev.DeadLetters {
				m.runOutbox(ctx)
			}
			if due := time.UnixMilli(ev.DelayedDue); ev.DelayedDue > 0 && due.Before(delayedAt) {
				delayedAt = due // newly parked messages due before the next pass
				delayed.Reset(max(due.Sub(m.now()), time.Millisecond))
			}
		case <-lag.C:
			if m.Leader() {
				m.sampleLag(ctx)
			}
		case <-hour.C:
			if m.Leader() {
				m.runHourly(ctx)
			}
		case <-retention.C:
			m.retentionAgain = m.runRetention(ctx)
		case <-hygiene.C:
			m.runHygiene(ctx)
		case <-nodes.C:
			m.watchNodes(ctx)
		case <-delayed.C:
			wait := m.runDelayed(ctx)
			delayedAt = m.now().Add(wait)
			delayed.Reset(max(wait, time.Millisecond))
		}
		// A retention backlog is pruned budget after budget, between renewals.
		if m.retentionAgain && ctx.Err() == nil && m.Leader() {
			select {
			case <-renew.C:
				m.renew(ctx)
			case <-time.After(retentionAgainDelay):
			case <-ctx.Done():
				return nil
			}
			m.retentionAgain = m.runRetention(ctx)
		}
		// A dead-letter backlog drains batch after batch, renewing the lease on time.
		for m.outboxAgain && ctx.Err() == nil && m.Leader() {
			select {
			case <-renew.C:
				m.renew(ctx)
			default:
			}
			m.runOutbox(ctx)
		}
	}
}

// renew takes or renews the lease. On becoming leader every duty runs once, so a
// takeover does not wait an hour for partitions or 20 s for a lag sample.
func (m *Maintainer) renew(ctx context.Context) {
	was := m.Leader()
	start := m.now()
	ok, err := m.st.MaintenanceLeaseTake(ctx, LeaseName, m.id, m.cfg.LeaseDuration)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			m.log.Warn("maintenance lease", "err", err)
		}
		return // keep what we had: it ends by itself at leaderUntil
	case !ok:
		m.leaderUntil.Store(0)
		if was {
			m.log.Info("maintenance lease lost", "holder", m.id)
		}
		return
	}
	// The database granted NOW(3)+lease at some instant after start: counting from
	// start never overestimates it.
	m.leaderUntil.Store(start.Add(m.cfg.LeaseDuration).UnixNano())
	if !was {
		m.log.Info("maintenance lease taken", "holder", m.id)
		m.runOutbox(ctx)
		m.sampleLag(ctx)
		m.runHourly(ctx)
		m.runHygiene(ctx)
		m.retentionAgain = m.runRetention(ctx)
	}
}

// withDefaults fills zero settings of cfg with config's documented defaults.
func withDefaults(cfg config.Maintenance) config.Maintenance {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.LeaseDuration, 15*time.Second)
	def(&cfg.RenewInterval, 2*time.Second)
	def(&cfg.OutboxInterval, 5*time.Second)
	def(&cfg.LagInterval, 20*time.Second)
	def(&cfg.AttemptRetention, 168*time.Hour)
	def(&cfg.RetentionInterval, time.Minute)
	def(&cfg.RetentionBudget, time.Second)
	def(&cfg.RetentionPause, 200*time.Millisecond)
	def(&cfg.HygieneInterval, time.Minute)
	if cfg.RetentionChunk <= 0 {
		cfg.RetentionChunk = 1000
	}
	return cfg
}

func (m *Maintainer) release() {
	if m.leaderUntil.Swap(0) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.st.MaintenanceLeaseRelease(ctx, LeaseName, m.id); err != nil {
		m.log.Warn("release maintenance lease", "err", err)
	}
}

func (m *Maintainer) subscribe(ctx context.Context, events chan<- notify.Event) {
	notify.Subscribe(ctx, m.rdb, m.keys, events, func(err error) {
		m.log.Warn("notify subscription refused; the outbox interval covers it", "err", err)
	})
}
