package fence

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// LoadReuse is how long after a (group, queue) fence was read from Redis a later
// Load of it trusts the in-memory view instead, while the subscription has stayed up
// since that read: every raise since then was announced to it, so the view is as
// current as the one the later POSTs of a long job rely on. A lone message's job
// then starts without a Redis round trip, as one inside a crowded job does. Five
// seconds (the bound of an API key's revocation) cover a trickle spread round-robin
// over a topic's queues: at 5 msg/s over 4 queues each fence is loaded every 0.8 s,
// and 1 s made every other lone job pay the read (0.3 ms median, bench scenario l).
const LoadReuse = 5 * time.Second

// LoadRefresh is the age of a fence's last read past which Load, still answering
// from the view, reads it again in the background (one HMGET, at most one at a time
// per fence): a queue used at least once a LoadReuse − LoadRefresh (1 s) keeps a
// fresh read and no job start waits for Redis, as a lone message's job did every
// LoadReuse (0.6 ms, 1 lone job in 6 at 5 msg/s over 4 queues; bench scenario l).
// Reads only follow jobs: an idle worker reads nothing.
const LoadRefresh = 4 * time.Second

// Watcher is a worker's view of the fences: what it read at job starts and what was
// announced since, per (group, queue). Create it with NewWatcher and run Run; every
// method is safe for concurrent use.
type Watcher struct {
	rdb  redis.UniversalClient
	keys delivery.Keys
	// now is the clock of LoadReuse; tests set it.
	now func() time.Time

	mu       sync.Mutex
	fences   map[[2]int64]int64
	statuses map[int64]int64        // group → status fence (statusValue)
	read     map[[2]int64]time.Time // when Load last read the fence while subscribed
	reading  map[[2]int64]bool      // fences being read again in the background
	epoch    int64                  // subscriptions confirmed so far; 0 while not subscribed
	changed  chan struct{}
	ready    chan struct{}
	once     sync.Once
}

// NewWatcher returns a Watcher for the namespace of keys.
func NewWatcher(rdb redis.UniversalClient, keys delivery.Keys) *Watcher {
	return &Watcher{rdb: rdb, keys: keys, now: time.Now, fences: map[[2]int64]int64{}, statuses: map[int64]int64{}, read: map[[2]int64]time.Time{},
		reading: map[[2]int64]bool{},
		changed: make(chan struct{}), ready: make(chan struct{})}
}

// SetClock replaces the clock LoadReuse is measured with (tests).
func (w *Watcher) SetClock(now func() time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = now
}

// subscribed records a confirmed (re)subscription: announcements made while the
// subscription was down are lost, so no earlier read is reused.
func (w *Watcher) subscribed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.epoch++
	clear(w.read)
}

// unsubscribed records that announcements no longer arrive.
func (w *Watcher) unsubscribed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.epoch = 0
	clear(w.read)
}

// Run keeps the subscription to the fence channel until ctx ends (delivery.Listen,
// with SUBSCRIBE: fences are announced to every node). Announcements sent while
// no subscription stands are lost: each confirmed subscription ends the reuse of
// reads made before it, and while none stands nothing read is reused (Load at
// the next job start covers them).
func (w *Watcher) Run(ctx context.Context) error {
	defer w.once.Do(func() { close(w.ready) })
	delivery.Listen(ctx, w.rdb, w.keys.FenceChannel(), delivery.Listener{Broadcast: true,
		Subscribed: func() {
			w.subscribed()
			w.once.Do(func() { close(w.ready) })
		},
		Ended: w.unsubscribed,
		Message: func(payload string) {
			if g, vs, status, ok := parse(payload); ok {
				w.merge(g, vs, status)
			}
		}})
	return nil
}

// Ready is closed once the first subscription is confirmed (or Run's context ended).
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// merge raises the view of group's queue fences to versions and its status fence
// to status (-1: none).
func (w *Watcher) merge(group int64, versions map[int64]int64, status int64) {
	w.mu.Lock()
	raised := false
	if cur, ok := w.statuses[group]; status >= 0 && (!ok || status > cur) {
		w.statuses[group] = status
		raised = true
	}
	for q, v := range versions {
		k := [2]int64{group, q}
		if v > w.fences[k] {
			w.fences[k] = v
			raised = true
		}
	}
	if raised {
		close(w.changed)
		w.changed = make(chan struct{})
	}
	w.mu.Unlock()
}

// Load reads the (group, queue) fence and the group's status fence from Redis (one
// HMGET), merges them into the in-memory view and reports whether version is below
// the queue's fence (the status is then read with Status). Within LoadReuse of its
// last read of that fence, with the subscription up all the while, it answers from
// the view alone: every raise since was announced to it; past LoadRefresh it reads
// the fence again in the background. A Redis error is returned with stale=false:
// sending a job that may be stale costs a duplicate, never a loss.
func (w *Watcher) Load(ctx context.Context, group, queue, version int64) (stale bool, err error) {
	k := [2]int64{group, queue}
	w.mu.Lock()
	epoch, at := w.epoch, w.now()
	if last, ok := w.read[k]; ok && epoch > 0 && at.Sub(last) < LoadReuse {
		stale = version < w.fences[k]
		if at.Sub(last) >= LoadRefresh && !w.reading[k] {
			w.reading[k] = true
			go func() {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LoadReuse-LoadRefresh)
				defer cancel()
				_ = w.read1(rctx, k, epoch, at)
				w.mu.Lock()
				delete(w.reading, k)
				w.mu.Unlock()
			}()
		}
		w.mu.Unlock()
		return stale, nil
	}
	w.mu.Unlock()
	err = w.read1(ctx, k, epoch, at)
	return w.Stale(group, queue, version), err
}

// read1 reads fence k and its group's status fence from Redis (one HMGET), merges
// them into the view and, when both parsed, records the read as made at `at` under
// subscription epoch.
func (w *Watcher) read1(ctx context.Context, k [2]int64, epoch int64, at time.Time) error {
	group, queue := k[0], k[1]
	vals, err := w.rdb.HMGet(ctx, w.keys.Fence(group), strconv.FormatInt(queue, 10), statusField).Result()
	if err != nil {
		return err
	}
	num := func(i int) (int64, bool, error) {
		if i >= len(vals) || vals[i] == nil {
			return 0, false, nil
		}
		s, _ := vals[i].(string)
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil, err
	}
	v, hasV, err1 := num(0)
	st, hasSt, err2 := num(1)
	versions, status := map[int64]int64{}, int64(-1)
	if hasV {
		versions[queue] = v
	}
	if hasSt {
		status = st
	}
	w.merge(group, versions, status)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	w.readAt(k, epoch, at)
	return nil
}

// readAt records that the fence k was read at `at` under subscription epoch, unless
// the subscription changed since.
func (w *Watcher) readAt(k [2]int64, epoch int64, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if epoch > 0 && epoch == w.epoch {
		w.read[k] = at
	}
}

// Status returns group's status fence as last seen: the config version of its last
// pause or resume and whether that paused it; ok is false when none was seen. A
// map read, no Redis command. The worker compares configVersion with its cached
// group's: the later of the two tells the status.
func (w *Watcher) Status(group int64) (configVersion int64, paused, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.statuses[group]
	return v / 2, v%2 == 1, ok
}

// Stale reports whether a job of cursor version on (group, queue) is below the
// fence as last seen: a map read, no Redis command.
func (w *Watcher) Stale(group, queue, version int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return version < w.fences[[2]int64{group, queue}]
}

// Changed returns a channel closed at the next raised fence (any group).
func (w *Watcher) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}
