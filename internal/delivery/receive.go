package delivery

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultHealthCheck is Receive's idle time before it checks a subscription with a
// PING when the caller gives none.
const DefaultHealthCheck = 3 * time.Second

// receiveRetryPause is the pause between two failed reads in a row (go-redis
// reconnects and subscribes again in between).
const receiveRetryPause = 100 * time.Millisecond

// Receive reads ps on the calling goroutine and hands each message, subscription
// change (*redis.Subscription) and *redis.Pong to handle until handle returns
// false, ps is closed or ctx ends. It returns nil in those cases, and ps is closed
// when it returns. handle runs on the reading goroutine, so a message reaches it
// without a goroutine switch: go-redis's PubSub.Channel hands each message from its
// reader to the caller's goroutine and wakes its health-check goroutine on every
// one, three goroutines per message where Receive has one.
//
// After health without any traffic (DefaultHealthCheck when 0; time handle spends
// on a message counts as traffic, so a handler waiting for its consumer is not
// silence) a watcher sends a PING; when a further health passes with nothing
// received (the watcher looks every health, so two to three intervals of silence
// in all) it closes ps and Receive returns ErrStale, so the caller subscribes anew on a new connection (a
// server that stopped answering, a half-open TCP connection). A read that fails
// otherwise is read again: go-redis reconnects and subscribes again, and the new
// confirmation reaches handle; the second failure in a row pauses 100 ms first.
func Receive(ctx context.Context, ps *redis.PubSub, health time.Duration, handle func(m any) bool) error {
	if health <= 0 {
		health = DefaultHealthCheck
	}
	w := &receiveWatch{health: health}
	w.last.Store(time.Now().UnixNano())
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go w.run(wctx, ps)
	var failed int
	for {
		m, err := ps.Receive(ctx)
		if err != nil {
			switch {
			case w.stale.Load():
				return ErrStale
			case ctx.Err() != nil || errors.Is(err, redis.ErrClosed):
				return nil
			}
			if failed++; failed > 1 {
				select {
				case <-time.After(receiveRetryPause):
				case <-ctx.Done():
					return nil
				}
			}
			continue
		}
		failed = 0
		w.busy.Store(true)
		more := handle(m)
		w.last.Store(time.Now().UnixNano())
		w.busy.Store(false)
		if !more {
			return nil
		}
	}
}

// ErrStale is Receive's error when its subscription answered nothing, not even a
// PING, for two health intervals.
var ErrStale = errors.New("subscription answered no PING")

// receiveWatch is Receive's health check: a PING after health without traffic, and
// the PubSub closed (stale set) when the next health passes with nothing read
// either. Time spent in the handler counts as traffic, so a handler that blocks
// (its consumer is behind) does not make a healthy connection look silent.
type receiveWatch struct {
	health time.Duration
	last   atomic.Int64 // UnixNano when the reader last finished with a message
	busy   atomic.Bool  // the handler is running
	stale  atomic.Bool
}

// run checks every health until ctx ends (Receive's own or the caller's), then
// closes ps, which ends a read in progress.
func (w *receiveWatch) run(ctx context.Context, ps *redis.PubSub) {
	t := time.NewTicker(w.health)
	defer t.Stop()
	var pingAt int64 // UnixNano of the PING not yet answered, 0: none
	for {
		select {
		case <-ctx.Done():
			_ = ps.Close()
			return
		case <-t.C:
		}
		now, l := time.Now().UnixNano(), w.last.Load()
		switch {
		case w.busy.Load() || (pingAt != 0 && l >= pingAt):
			pingAt = 0 // in the handler, or answered (or a message came)
			continue
		case pingAt != 0 && now-pingAt >= int64(w.health):
			w.stale.Store(true)
			_ = ps.Close()
			return
		}
		if pingAt == 0 && now-l >= int64(w.health) {
			pctx, cancel := context.WithTimeout(ctx, w.health)
			_ = ps.Ping(pctx) // a failed write reconnects; the read loop notices
			cancel()
			pingAt = now
		}
	}
}
