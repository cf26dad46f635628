package worker

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/webhook"
	"github.com/heraldhq/herald/models"
)

func testWorker(allowPrivate bool) *Worker {
	return &Worker{cfg: config.Worker{ResponseCapBytes: 64 << 10}, client: webhook.NewClient(ssrf.Guard{AllowPrivate: allowPrivate})}
}

func testGroup(t *testing.T, url string, timeoutMS int) *cachedGroup {
	s, err := signing.NewSigner(signing.NewSecret())
	require.NoError(t, err)
	return &cachedGroup{Group: &models.Group{ID: 1, Name: "g", EndpointURL: url, BatchSize: 1, TimeoutMS: timeoutMS}, signers: []*signing.Signer{s}}
}

var one = []models.Message{{QueueID: 1, Offset: 1, Body: []byte(`{}`), ContentType: "application/json"}}

func attempt1(int64) int { return 1 }

// TestPostHugeResponseIsCut: a 50 MiB answer is read only up to the cap and the
// POST still counts as delivered.
func TestPostHugeResponseIsCut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range 50 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	start := time.Now()
	out, _ := testWorker(true).post(context.Background(), testGroup(t, srv.URL, 5000), "t", attempt1, one)
	require.Equal(t, webhook.KindDelivered, out.Kind)
	require.Less(t, time.Since(start), 5*time.Second)
}

// TestPostResetMidResponse: the connection dies after the status line of a 500: a
// failure, classed reset or http_status, never delivered.
func TestPostResetMidResponse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err == nil {
					req.Body.Close()
				}
				c.Write([]byte("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 1000\r\n\r\npartial"))
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // RST instead of FIN
				}
				c.Close()
			}()
		}
	}()
	out, _ := testWorker(true).post(context.Background(), testGroup(t, "http://"+ln.Addr().String()+"/", 5000), "t", attempt1, one)
	require.Equal(t, webhook.KindFailed, out.Kind)
	require.Contains(t, []delivery.ErrorClass{delivery.ClassReset, delivery.ClassHTTPStatus, delivery.ClassOther}, out.Class)
}

// TestPostTrickledHeadersTimeOut: headers trickled past timeout_ms are a timeout.
func TestPostTrickledHeadersTimeOut(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = http.ReadRequest(bufio.NewReader(c))
		for _, b := range []byte("HTTP/1.1 200 OK\r\nX-Slow: yes\r\n") {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond) // latency: an endpoint that trickles its headers
		}
	}()
	start := time.Now()
	out, _ := testWorker(true).post(context.Background(), testGroup(t, "http://"+ln.Addr().String()+"/", 300), "t", attempt1, one)
	require.Equal(t, webhook.KindFailed, out.Kind)
	require.Equal(t, delivery.ClassTimeout, out.Class)
	require.Less(t, time.Since(start), 2*time.Second)
}

// TestPostBlockedAtDialTime: without the allow flag, the dialer refuses loopback,
// private, link-local and IPv4-mapped addresses even if creation was bypassed.
func TestPostBlockedAtDialTime(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	w := testWorker(false)
	out, _ := w.post(context.Background(), testGroup(t, srv.URL, 2000), "t", attempt1, one)
	require.Equal(t, webhook.KindFailed, out.Kind)
	require.Equal(t, delivery.ClassBlocked, out.Class)
	for _, addr := range []string{"10.0.0.1:80", "169.254.169.254:80", "[::ffff:127.0.0.1]:80", "[fe80::1]:80", "100.64.0.1:80", "0.0.0.0:80"} {
		require.ErrorIs(t, ssrf.Guard{}.Control("tcp", addr, nil), ssrf.ErrBlocked, addr)
	}
	require.NoError(t, ssrf.Guard{}.Control("tcp", "93.184.215.14:443", nil))
	require.NoError(t, ssrf.Guard{AllowPrivate: true}.Control("tcp", "127.0.0.1:80", nil))
}
