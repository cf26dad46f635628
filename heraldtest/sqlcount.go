package heraldtest

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// Statement is one statement a client sent through a SQLCounter: when it passed and
// its text (at most 200 bytes).
type Statement struct {
	At  time.Time
	SQL string
}

// SQLCounter is a TCP proxy in front of MySQL that records every statement its
// clients send (COM_QUERY packets: Herald's DSNs interpolate parameters, so every
// statement is one), so a test can count what one component costs without reading
// the shared server's global counters. Close (also at test end) stops it.
type SQLCounter struct {
	proxy *tcpProxy

	mu    sync.Mutex
	stmts []Statement
}

// NewSQLCounter listens on a random loopback port and forwards to the server of dsn.
func NewSQLCounter(t testing.TB, dsn string) *SQLCounter {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	c := &SQLCounter{}
	c.proxy = startProxy(t, cfg.Addr, nil, func(conn, up net.Conn) {
		go func() {
			defer conn.Close()
			defer up.Close()
			_, _ = io.Copy(conn, up)
		}()
		c.forward(up, conn)
	})
	t.Cleanup(c.Close)
	return c
}

// ProxiedDSN returns dsn with its address replaced by the counter's.
func (c *SQLCounter) ProxiedDSN(t testing.TB, dsn string) string {
	t.Helper()
	return c.proxy.proxiedDSN(t, dsn)
}

// Since returns the statements sent at or after t, oldest first.
func (c *SQLCounter) Since(t time.Time) []Statement {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Statement
	for _, s := range c.stmts {
		if !s.At.Before(t) {
			out = append(out, s)
		}
	}
	return out
}

// Close stops listening and closes every proxied connection.
func (c *SQLCounter) Close() { c.proxy.close() }

// forward copies client packets to the server one by one, recording each command
// packet (sequence id 0) that is a COM_QUERY.
func (c *SQLCounter) forward(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	for {
		pk, err := readPacket(src)
		if err != nil {
			return
		}
		if q, ok := pk.query(200); ok {
			c.mu.Lock()
			c.stmts = append(c.stmts, Statement{At: time.Now(), SQL: strings.TrimSpace(q)})
			c.mu.Unlock()
		}
		if _, err := dst.Write(pk.bytes()); err != nil {
			return
		}
	}
}
