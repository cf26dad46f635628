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
// when it returns. handle runs on the reading goroutine, so a message reaches it without a
// goroutine switch: go-redis's PubSub.Channel hands each message from its reader to
// the caller's goroutine and wakes its health-check goroutine on every one, three
// goroutines per message where Receive has one.
//
// After health without any traffic (DefaultHealthCheck when 0) a watcher sends a
// PING; when a further health passes with nothing received (the watcher looks
// every health, so two to three intervals of silence in all) it closes ps and
// Receive returns ErrStale, so the caller subscribes anew on a new connection (a
// server that stopped answering, a half-open TCP connection). A read that fails
// otherwise is read again: go-redis reconnects and subscribes again, and the new
// confirmation reaches handle; the second failure in a row pauses 100 ms first.
func Receive(ctx context.Context, ps *redis.PubSub, health time.Duration, handle func(m any) bool) error {
	if health <= 0 {
		health = DefaultHealthCheck
	}
	var last atomic.Int64 // UnixNano of the last read that returned
	var stale atomic.Bool
	last.Store(time.Now().UnixNano())
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go watchReceive(wctx, ps, health, &last, &stale)
	var failed int
	for {
		m, err := ps.Receive(ctx)
		if err != nil {
			switch {
			case stale.Load():
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
		last.Store(time.Now().UnixNano())
		if !handle(m) {
			return nil
		}
	}
}

// ErrStale is Receive's error when its subscription answered nothing, not even a
// PING, for two health intervals.
var ErrStale = errors.New("subscription answered no PING")

// watchReceive is Receive's health check: a PING after health without traffic, and
// ps closed (stale set) when the next health passes with nothing read either. It
// also closes ps when ctx ends (Receive's own or the caller's), which ends a read
// in progress.
func watchReceive(ctx context.Context, ps *redis.PubSub, health time.Duration, last *atomic.Int64, stale *atomic.Bool) {
	t := time.NewTicker(health)
	defer t.Stop()
	var pingAt int64 // UnixNano of the PING not yet answered, 0: none
	for {
		select {
		case <-ctx.Done():
			_ = ps.Close()
			return
		case <-t.C:
		}
		now, l := time.Now().UnixNano(), last.Load()
		switch {
		case pingAt != 0 && l >= pingAt:
			pingAt = 0 // answered (or a message came)
		case pingAt != 0 && now-pingAt >= int64(health):
			stale.Store(true)
			_ = ps.Close()
			return
		}
		if pingAt == 0 && now-l >= int64(health) {
			pctx, cancel := context.WithTimeout(ctx, health)
			_ = ps.Ping(pctx) // a failed write reconnects; the read loop notices
			cancel()
			pingAt = now
		}
	}
}
