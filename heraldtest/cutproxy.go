package heraldtest

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// CutProxy is a TCP proxy in front of MySQL that loses the answer to one chosen
// statement, as a server or network lost right after a commit: after Arm(prefix),
// the next statement (COM_QUERY) starting with prefix reaches the server and runs;
// its answer is dropped, every connection through the proxy is closed and new ones
// are closed at once until Restore. Close (also at test end) stops it.
type CutProxy struct {
	proxy *tcpProxy

	mu     sync.Mutex
	prefix string        // armed statement prefix; "" when disarmed
	down   bool          // cut: connections are refused until Restore
	cut    chan struct{} // closed when the armed statement was cut
}

// NewCutProxy listens on a random loopback port and forwards to the server of dsn.
func NewCutProxy(t testing.TB, dsn string) *CutProxy {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	p := &CutProxy{cut: make(chan struct{})}
	p.proxy = startProxy(t, cfg.Addr, nil, p.relay)
	t.Cleanup(p.Close)
	return p
}

// ProxiedDSN returns dsn with its address replaced by the proxy's.
func (p *CutProxy) ProxiedDSN(t testing.TB, dsn string) string {
	t.Helper()
	return p.proxy.proxiedDSN(t, dsn)
}

// Arm makes the next statement that starts with prefix the one whose answer is lost.
func (p *CutProxy) Arm(prefix string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prefix, p.cut = prefix, make(chan struct{})
}

// Cut is closed once the armed statement ran and its answer was dropped.
func (p *CutProxy) Cut() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Restore lets connections through again.
func (p *CutProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// Close stops listening and closes every proxied connection.
func (p *CutProxy) Close() { p.proxy.close() }

// relay copies one client's packets to the server and the answers back, until the
// armed statement passes: then its answer ends every connection (blackout).
func (p *CutProxy) relay(client, up net.Conn) {
	p.mu.Lock()
	down := p.down
	p.mu.Unlock()
	if down {
		client.Close()
		up.Close()
		return
	}
	var armed atomic.Bool // this client sent the armed statement: its answer is lost
	go func() {
		defer client.Close()
		defer up.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := up.Read(buf)
			if n > 0 && armed.Load() {
				p.blackout()
				return
			}
			if n > 0 {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer client.Close()
	defer up.Close()
	for {
		pk, err := readPacket(client)
		if err != nil {
			return
		}
		if q, ok := pk.query(200); ok && p.take(q) {
			armed.Store(true)
		}
		if _, err := up.Write(pk.bytes()); err != nil {
			return
		}
	}
}

// take reports whether q is the armed statement, disarming it.
func (p *CutProxy) take(q string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prefix == "" || !strings.HasPrefix(strings.TrimSpace(q), p.prefix) {
		return false
	}
	p.prefix = ""
	return true
}

// blackout closes every connection through the proxy and refuses new ones until
// Restore.
func (p *CutProxy) blackout() {
	p.mu.Lock()
	p.down = true
	cut := p.cut
	p.mu.Unlock()
	p.proxy.cutAll()
	select {
	case <-cut:
	default:
		close(cut)
	}
}
