package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/config"
)

// TestPublishStalledDatabase stalls the connection to MySQL (a proxy that stops
// forwarding, as a SIGSTOPped server) while publishes are in flight: each answers 503
// with Retry-After within about PublishTimeout instead of waiting for the database,
// and publishing works again once it answers.
func TestPublishStalledDatabase(t *testing.T) {
	t.Parallel()
	base, err := mysql.ParseDSN(heraldtest.MySQLBase())
	require.NoError(t, err)
	proxy := heraldtest.NewStallProxy(t, base.Addr)
	h := heraldtest.StartHerald(t, func(c *config.Config) {
		c.MySQLDSN = proxy.ProxiedDSN(t, c.MySQLDSN)
		c.PublishTimeout = 2 * time.Second
	})
	h.CreateTopic("orders", 2)
	key := h.CreateAPIKey("orders")
	h.Publish(key, "orders", map[string]any{"body": 1})

	proxy.Stall()
	t0 := time.Now()
	resumed := time.AfterFunc(12*time.Second, proxy.Resume) // bounds the test whatever Herald does
	defer resumed.Stop()
	type answer struct {
		code       int
		retryAfter string
		took       time.Duration
	}
	answers := make([]answer, 8)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			var hdrs []string // odd ones stall in the Idempotency-Key lookup, even ones in the group-commit flush
			if i%2 == 1 {
				hdrs = []string{"Idempotency-Key", fmt.Sprintf("stall-%d", i)}
			}
			code, _, hdr := h.Do("POST", "/v1/topics/orders/messages", key, map[string]any{"messages": []any{map[string]any{"body": i}}}, hdrs...)
			answers[i] = answer{code, hdr.Get("Retry-After"), time.Since(start)}
		}()
	}
	wg.Wait()
	t.Logf("answered after %v", time.Since(t0))
	proxy.Resume()
	for i, a := range answers {
		require.Equal(t, http.StatusServiceUnavailable, a.code, "publish %d", i)
		require.NotEmpty(t, a.retryAfter, "publish %d carries Retry-After", i)
		require.Less(t, a.took, 8*time.Second, "publish %d answered within the deadline", i)
	}
	require.Eventually(t, func() bool {
		code, _, _ := h.Do("POST", "/v1/topics/orders/messages", key, map[string]any{"messages": []any{map[string]any{"body": "after"}}})
		return code == http.StatusCreated
	}, 20*time.Second, 50*time.Millisecond)
	t.Logf("publishing again after %v", time.Since(t0))
}

// TestPublishDatabaseDown cuts every connection to MySQL and refuses new ones: each
// publish answers 503 with Retry-After (never 500), whether it fails in a lookup or
// in the group commit.
func TestPublishDatabaseDown(t *testing.T) {
	t.Parallel()
	base, err := mysql.ParseDSN(heraldtest.MySQLBase())
	require.NoError(t, err)
	proxy := heraldtest.NewStallProxy(t, base.Addr)
	h := heraldtest.StartHerald(t, func(c *config.Config) {
		c.MySQLDSN = proxy.ProxiedDSN(t, c.MySQLDSN)
		c.PublishTimeout = 2 * time.Second
	})
	h.CreateTopic("orders", 1)
	key := h.CreateAPIKey("orders")
	h.Publish(key, "orders", map[string]any{"body": 1})
	proxy.Close()
	for i := range 6 {
		var hdrs []string
		if i%2 == 1 {
			hdrs = []string{"Idempotency-Key", fmt.Sprintf("down-%d", i)}
		}
		code, body, hdr := h.Do("POST", "/v1/topics/orders/messages", key, map[string]any{"messages": []any{map[string]any{"body": i}}}, hdrs...)
		require.Equal(t, http.StatusServiceUnavailable, code, "publish %d: %s", i, body)
		require.NotEmpty(t, hdr.Get("Retry-After"), "publish %d", i)
		require.Equal(t, "application/problem+json", hdr.Get("Content-Type"))
	}
}
