package heraldtest

import (
	"net"
	"sync"
	"testing"
)

// StallProxy is a TCP proxy in front of a server that a test can stall: while
// stalled it forwards nothing in either direction and accepts no new connection
// (the peer sees a database that stopped answering, as a SIGSTOPped mariadbd),
// without touching the shared server. Close (also at test end) resumes and stops it.
type StallProxy struct {
	proxy *tcpProxy

	mu      sync.Mutex
	stalled bool
	resume  chan struct{}
}

// NewStallProxy listens on a random loopback port and forwards to target (host:port).
func NewStallProxy(t testing.TB, target string) *StallProxy {
	t.Helper()
	p := &StallProxy{resume: make(chan struct{})}
	p.proxy = startProxy(t, target, p.gate, func(c, up net.Conn) {
		go p.pump(up, c)
		p.pump(c, up)
	})
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *StallProxy) Addr() string { return p.proxy.addr() }

// ProxiedDSN returns dsn with its address replaced by p's.
func (p *StallProxy) ProxiedDSN(t testing.TB, dsn string) string {
	t.Helper()
	return p.proxy.proxiedDSN(t, dsn)
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
	p.proxy.close()
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
