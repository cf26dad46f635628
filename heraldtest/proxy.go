package heraldtest

import (
	"net"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// tcpProxy is the loopback TCP proxy under StallProxy and SQLCounter: it accepts
// clients, dials target for each (after wait, if set), tracks both ends so close
// can cut them, and hands the pair to relay, which copies until either side ends.
type tcpProxy struct {
	ln     net.Listener
	target string
	wait   func()
	relay  func(client, upstream net.Conn)

	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// startProxy listens on a random loopback port for target (host:port).
func startProxy(t testing.TB, target string, wait func(), relay func(client, upstream net.Conn)) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tcpProxy{ln: ln, target: target, wait: wait, relay: relay}
	go p.accept()
	return p
}

// addr is the proxy's host:port.
func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

// proxiedDSN returns dsn with its address replaced by the proxy's.
func (p *tcpProxy) proxiedDSN(t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.Addr = p.addr()
	return cfg.FormatDSN()
}

// close stops listening and closes every proxied connection.
func (p *tcpProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.ln.Close()
	for _, c := range conns {
		c.Close()
	}
}

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *tcpProxy) serve(c net.Conn) {
	if p.wait != nil {
		p.wait()
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	p.relay(c, up)
}
