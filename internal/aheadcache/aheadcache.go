// Package aheadcache is a read-through cache that refreshes ahead: an entry is
// served for TTL after it was read, and the first use past half of TTL starts one
// background re-read (after a short delay, so it runs after the caller's work), so a
// key used at least every TTL/2 never waits for its read while changes still apply
// within TTL. This is Caffeine's refreshAfterWrite beside expireAfterWrite, sized for
// Herald's hot lookups: API keys and topics on the publish path, group settings on
// the worker's.
package aheadcache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Cache. Load is required; TTL must be positive.
type Options[K comparable, V any] struct {
	// TTL is how long a read value is served (a revocation or change applies within it).
	TTL time.Duration
	// RefreshDelay is how long after the use that found an entry past TTL/2 its
	// background re-read starts.
	RefreshDelay time.Duration
	// Load reads key's value; it runs on the caller's path for a miss or an expired
	// entry, in the background for a refresh (bounded by TTL).
	Load func(ctx context.Context, key K) (V, error)
	// Gone reports whether a Load error means the key no longer exists: a refresh
	// that finds it so drops the entry, so the next use reads (and fails) at once.
	// Other refresh errors leave the entry to expire. nil: no error means gone.
	Gone func(error) bool
	// Loaded, when set, runs after every successful read whose value was kept, never
	// on the caller's path (a miss runs it in a goroutine of its own); e.g. to note
	// that an API key was used.
	Loaded func(ctx context.Context, key K, v V)
}

// Cache is a refresh-ahead cache of V by K; create it with New. Misses and errors
// are not cached. Safe for concurrent use.
type Cache[K comparable, V any] struct {
	o       Options[K, V]
	entries sync.Map // K → *entry[V]
}

type entry[V any] struct {
	v          V
	at         time.Time // when the read that produced v started
	refreshing atomic.Bool
}

// New returns a Cache with o.
func New[K comparable, V any](o Options[K, V]) *Cache[K, V] {
	return &Cache[K, V]{o: o}
}

// Get returns key's value: the cached one if read less than TTL ago (starting its
// background re-read past TTL/2), else a fresh read, kept unless an entry read later
// is cached by then. A failed read returns its error and caches nothing.
func (c *Cache[K, V]) Get(ctx context.Context, key K) (V, error) {
	if v, ok := c.entries.Load(key); ok {
		e := v.(*entry[V])
		if age := time.Since(e.at); age < c.o.TTL {
			if age >= c.o.TTL/2 && e.refreshing.CompareAndSwap(false, true) {
				base := context.WithoutCancel(ctx)
				time.AfterFunc(c.o.RefreshDelay, func() { c.refresh(base, key, e) })
			}
			return e.v, nil
		}
	}
	at := time.Now()
	v, err := c.o.Load(ctx, key)
	if err != nil {
		var zero V
		return zero, err
	}
	if c.keep(key, &entry[V]{v: v, at: at}) && c.o.Loaded != nil {
		go c.o.Loaded(context.WithoutCancel(ctx), key, v)
	}
	return v, nil
}

// keep caches e unless the entry cached for key was read later; it reports whether
// e was kept.
func (c *Cache[K, V]) keep(key K, e *entry[V]) bool {
	for {
		cur, loaded := c.entries.LoadOrStore(key, e)
		if !loaded {
			return true
		}
		if cur.(*entry[V]).at.After(e.at) {
			return false
		}
		if c.entries.CompareAndSwap(key, cur, e) {
			return true
		}
	}
}

// refresh re-reads key and replaces old with the value unless the entry changed
// meanwhile (dropped or replaced): a dropped key is never brought back by a read
// that started before the drop.
func (c *Cache[K, V]) refresh(ctx context.Context, key K, old *entry[V]) {
	ctx, cancel := context.WithTimeout(ctx, c.o.TTL)
	defer cancel()
	at := time.Now()
	v, err := c.o.Load(ctx, key)
	switch {
	case err != nil:
		if c.o.Gone != nil && c.o.Gone(err) {
			c.entries.CompareAndDelete(key, old)
		}
		old.refreshing.Store(false) // a later use past TTL/2 may try again
	case c.entries.CompareAndSwap(key, old, &entry[V]{v: v, at: at}):
		if c.o.Loaded != nil {
			c.o.Loaded(ctx, key, v)
		}
	}
}

// Drop forgets key (its value changed or was revoked): the next Get reads it.
func (c *Cache[K, V]) Drop(key K) { c.entries.Delete(key) }

// Range calls f with each cached key and value (in no order) until f returns false.
func (c *Cache[K, V]) Range(f func(key K, v V) bool) {
	c.entries.Range(func(k, v any) bool { return f(k.(K), v.(*entry[V]).v) })
}
