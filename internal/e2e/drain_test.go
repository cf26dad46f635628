package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestShutdownDrainsPublishes: a publish whose body is still arriving when Herald is
// told to stop is stored and answered 201: the group-commit writer stops only after
// the HTTP server has drained its requests.
func TestShutdownDrainsPublishes(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 1)
	key := h.CreateAPIKey("orders")

	body := `{"messages":[{"body":{"n":1}}]}`
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.BaseURL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /v1/topics/orders/messages HTTP/1.1\r\nHost: herald\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, len(body), body[:10])
	require.NoError(t, err)
	// The server has read the headers, so the connection is active, not idle: net/http
	// exposes no signal for that to a client, so a short pause stands in for it.
	time.Sleep(100 * time.Millisecond)

	stopped := make(chan struct{})
	go func() { h.Stop(); close(stopped) }()
	time.Sleep(300 * time.Millisecond) // proves Herald does not stop while the request is open
	select {
	case <-stopped:
		t.Fatal("Herald stopped with a request in flight")
	default:
	}
	_, err = io.WriteString(conn, body[10:])
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(out))
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Herald did not stop after the request drained")
	}
	var n int
	require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(*) FROM queue_000001").Scan(&n))
	require.Equal(t, 1, n)
}
