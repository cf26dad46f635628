package delivery_test

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestReceiveStale subscribes through a proxy to the test Redis: idle for several
// health intervals, Receive keeps going (its PINGs are answered); once the proxy
// stops passing Redis's answers on, Receive returns ErrStale within two to three
// intervals, where a bare PubSub.Receive would wait on the silent connection for
// ever.
func TestReceiveStale(t *testing.T) {
	t.Parallel()
	p := startFreezeProxy(t, testdb.RedisAddr())
	ctx, _, ps, _ := subscribeVia(t, p.addr)

	const health = 100 * time.Millisecond
	var pongs atomic.Int64
	ended := make(chan error, 1)
	go func() {
		ended <- delivery.Receive(ctx, ps, health, func(m any) bool {
			if _, ok := m.(*redis.Pong); ok {
				pongs.Add(1)
			}
			return true
		})
	}()
	select {
	case err := <-ended:
		t.Fatalf("Receive ended on a healthy idle subscription: %v", err)
	case <-time.After(8 * health):
	}
	require.Positive(t, pongs.Load(), "idle subscription checked with PING")

	p.freeze()
	start := time.Now()
	select {
	case err := <-ended:
		require.ErrorIs(t, err, delivery.ErrStale)
		require.Less(t, time.Since(start), 8*health, "about three health intervals at most")
	case <-time.After(20 * health):
		t.Fatal("a silent subscription was not noticed")
	}
}

// TestReceiveSlowHandler: a handler that holds a message for many health
// intervals (its consumer is behind) is not taken for a silent connection: Receive
// goes on and hands over the messages that waited meanwhile, in order.
func TestReceiveSlowHandler(t *testing.T) {
	t.Parallel()
	ctx, rdb, ps, channel := subscribeVia(t, testdb.RedisAddr())

	const health = 50 * time.Millisecond
	got := make(chan string, 8)
	ended := make(chan error, 1)
	go func() {
		ended <- delivery.Receive(ctx, ps, health, func(m any) bool {
			if msg, ok := m.(*redis.Message); ok {
				if msg.Payload == "slow" {
					time.Sleep(12 * health)
				}
				got <- msg.Payload
			}
			return true
		})
	}()
	for _, p := range []string{"slow", "a", "b"} {
		require.NoError(t, rdb.Publish(ctx, channel, p).Err())
	}
	for _, want := range []string{"slow", "a", "b"} {
		select {
		case p := <-got:
			require.Equal(t, want, p)
		case err := <-ended:
			t.Fatalf("Receive ended while its handler was busy: %v", err)
		case <-time.After(5 * time.Second):
			t.Fatalf("%q not received", want)
		}
	}
	select {
	case err := <-ended:
		t.Fatalf("Receive ended: %v", err)
	case <-time.After(4 * health):
	}
}

// subscribeVia subscribes a new client of the Redis at addr to a channel of its
// own and waits for the confirmation; the client closes and ctx ends with the test.
func subscribeVia(t *testing.T, addr string) (context.Context, *redis.Client, *redis.PubSub, string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	channel := testdb.RandomName("receive-") + ":ch"
	ps, err := delivery.SubscribeConfirmed(ctx, rdb, channel, true)
	require.NoError(t, err)
	return ctx, rdb, ps, channel
}

// freezeProxy passes TCP connections on to a server until freeze, after which it
// drops what the server sends while keeping every connection open.
type freezeProxy struct {
	addr   string
	frozen atomic.Bool
}

func startFreezeProxy(t *testing.T, target string) *freezeProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	p := &freezeProxy{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			t.Cleanup(func() { _ = c.Close(); _ = s.Close() })
			go func() { _, _ = io.Copy(s, c) }()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := s.Read(buf)
					if err != nil {
						return
					}
					if !p.frozen.Load() {
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return p
}

func (p *freezeProxy) freeze() { p.frozen.Store(true) }
