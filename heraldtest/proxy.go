package heraldtest

import (
	"encoding/binary"
	"io"
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

// cutAll closes every proxied connection and keeps listening.
func (p *tcpProxy) cutAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
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

// packet is one MySQL protocol packet: its 4-byte header (3 bytes of length, the
// sequence id) and payload.
type packet struct {
	hdr     [4]byte
	payload []byte
}

// readPacket reads the next packet from r.
func readPacket(r io.Reader) (packet, error) {
	var p packet
	if _, err := io.ReadFull(r, p.hdr[:]); err != nil {
		return p, err
	}
	p.payload = make([]byte, int(binary.LittleEndian.Uint32(append(p.hdr[:3:3], 0))))
	_, err := io.ReadFull(r, p.payload)
	return p, err
}

// query returns the statement of a COM_QUERY packet (a command: sequence id 0), at
// most limit bytes of it, and whether p is one.
func (p packet) query(limit int) (string, bool) {
	if p.hdr[3] != 0 || len(p.payload) == 0 || p.payload[0] != 0x03 {
		return "", false
	}
	return string(p.payload[1:min(len(p.payload), limit+1)]), true
}

// bytes is p as sent on the wire.
func (p packet) bytes() []byte { return append(p.hdr[:], p.payload...) }
