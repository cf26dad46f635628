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

// Watcher is a worker's view of the fences: what it read at job starts and what was
// announced since, per (group, queue). Create it with NewWatcher and run Run; every
// method is safe for concurrent use.
type Watcher struct {
	rdb  redis.UniversalClient
	keys delivery.Keys

	mu       sync.Mutex
	fences   map[[2]int64]int64
	statuses map[int64]int64 // group → status fence (statusValue)
	changed  chan struct{}
	ready    chan struct{}
	once     sync.Once
}

// NewWatcher returns a Watcher for the namespace of keys.
func NewWatcher(rdb redis.UniversalClient, keys delivery.Keys) *Watcher {
	return &Watcher{rdb: rdb, keys: keys, fences: map[[2]int64]int64{}, statuses: map[int64]int64{}, changed: make(chan struct{}), ready: make(chan struct{})}
}

// Run keeps the subscription to the fence channel until ctx ends; go-redis
// resubscribes after a dropped connection (announcements sent meanwhile are lost;
// Load at the next job start covers them).
func (w *Watcher) Run(ctx context.Context) error {
	sub := w.rdb.Subscribe(ctx, w.keys.FenceChannel())
	defer sub.Close()
	for ctx.Err() == nil {
		if _, err := sub.Receive(ctx); err == nil {
			break
		}
		select { // Redis unreachable: jobs still Load at start
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	w.once.Do(func() { close(w.ready) })
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			if g, vs, status, ok := parse(m.Payload); ok {
				w.merge(g, vs, status)
			}
		}
	}
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
// the queue's fence (the status is then read with Status). A Redis error is
// returned with stale=false: sending a job that may be stale costs a duplicate,
// never a loss.
func (w *Watcher) Load(ctx context.Context, group, queue, version int64) (stale bool, err error) {
	vals, err := w.rdb.HMGet(ctx, w.keys.Fence(group), strconv.FormatInt(queue, 10), statusField).Result()
	if err != nil {
		return w.Stale(group, queue, version), err
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
	return w.Stale(group, queue, version), errors.Join(err1, err2)
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
