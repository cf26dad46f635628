package testinfra

import (
	"net"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// StallProxy is a TCP proxy in front of a server that a test can stall: while
// stalled it forwards nothing in either direction and accepts no new connection
// (the peer sees a database that stopped answering, as a SIGSTOPped mariadbd),
// without touching the shared server. Close (also at test end) resumes and stops it.
type StallProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	stalled bool
	resume  chan struct{}
	conns   []net.Conn
	closed  bool
}

// NewStallProxy listens on a random loopback port and forwards to target (host:port).
func NewStallProxy(t testing.TB, target string) *StallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &StallProxy{ln: ln, target: target, resume: make(chan struct{})}
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *StallProxy) Addr() string { return p.ln.Addr().String() }

// ProxiedDSN returns dsn with its address replaced by p's.
func (p *StallProxy) ProxiedDSN(t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.Addr = p.Addr()
	return cfg.FormatDSN()
}

// Stall stops all forwarding until Resume.
func (p *StallProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stalled {
		p.stalled = true
		p.resume = make(chan struct{})
	}
}

// Resume forwards again whatever waited.
func (p *StallProxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled {
		p.stalled = false
		close(p.resume)
	}
}

// Close resumes, stops listening and closes every proxied connection.
func (p *StallProxy) Close() {
	p.Resume()
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

// gate blocks while the proxy is stalled.
func (p *StallProxy) gate() {
	p.mu.Lock()
	ch, stalled := p.resume, p.stalled
	p.mu.Unlock()
	if stalled {
		<-ch
	}
}

func (p *StallProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *StallProxy) serve(c net.Conn) {
	p.gate()
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
	go p.pump(up, c)
	p.pump(c, up)
}

// pump copies src to dst in small reads, waiting at the gate before each write.
func (p *StallProxy) pump(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
