package heraldtest

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// ClockProxy is a TCP proxy in front of MySQL that moves the database clock as its
// clients see it, as an NTP step or a VM restore moves a server's clock: after
// Step(-time.Hour) every proxied session's NOW() is an hour earlier from its next
// statement on, and it keeps ticking. It works through the session time zone:
// Herald's sessions run in '+00:00' and read DATETIME values as UTC, NOW() follows
// the session's time_zone, and DATETIME columns keep what was written, so rows
// written before the step are as far ahead of the new NOW() as after a real step.
// Before a client's next command the proxy sends `SET time_zone = '±hh:mm'` on its
// session and drops the answer (and again after the client sets time_zone itself,
// as the driver does when it connects). Steps are whole minutes, within ±12 h in
// all. Sessions of other clients (a test's own Store) keep the real clock. Close
// (also at test end) stops it.
type ClockProxy struct {
	proxy  *tcpProxy
	offset atomic.Int64 // minutes added to the real clock
}

// NewClockProxy listens on a random loopback port and forwards to the server of dsn.
func NewClockProxy(t testing.TB, dsn string) *ClockProxy {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	c := &ClockProxy{}
	c.proxy = startProxy(t, cfg.Addr, nil, c.relay)
	t.Cleanup(c.Close)
	return c
}

// ProxiedDSN returns dsn with its address replaced by the proxy's.
func (c *ClockProxy) ProxiedDSN(t testing.TB, dsn string) string {
	t.Helper()
	return c.proxy.proxiedDSN(t, dsn)
}

// Step moves the clock of every proxied session by d (negative: back), rounded to
// whole minutes, from each session's next statement on.
func (c *ClockProxy) Step(d time.Duration) {
	c.offset.Add(int64(d.Round(time.Minute) / time.Minute))
}

// Close stops listening and closes every proxied connection.
func (c *ClockProxy) Close() { c.proxy.close() }

// zone renders an offset in minutes as a MySQL time zone, e.g. '-01:00'.
func zone(minutes int64) string {
	sign := "+"
	if minutes < 0 {
		sign, minutes = "-", -minutes
	}
	return fmt.Sprintf("'%s%02d:%02d'", sign, minutes/60, minutes%60)
}

// relay forwards one session: client commands one packet at a time (a command
// packet has sequence id 0), with a SET time_zone put before a command whenever the
// session's zone differs from the proxy's offset; server packets are copied, less
// the answer to each SET the proxy sent. The MySQL protocol is strictly
// request-response, so the next server packet after an injected SET is its answer.
func (c *ClockProxy) relay(client, up net.Conn) {
	var swallow atomic.Int64
	go func() {
		defer client.Close()
		defer up.Close()
		for {
			pk, err := readPacket(up)
			if err != nil {
				return
			}
			if swallow.Load() > 0 {
				swallow.Add(-1) // the OK (or error) of an injected SET
				continue
			}
			if _, err := client.Write(pk.bytes()); err != nil {
				return
			}
		}
	}()
	defer client.Close()
	defer up.Close()
	applied := int64(0) // the driver connects in '+00:00'
	for {
		pk, err := readPacket(client)
		if err != nil {
			return
		}
		if pk.hdr[3] == 0 && len(pk.payload) > 0 {
			if want := c.offset.Load(); want != applied {
				set := packet{payload: append([]byte{0x03}, "SET time_zone = "+zone(want)...)}
				binary.LittleEndian.PutUint32(set.hdr[:], uint32(len(set.payload))) // sequence id 0
				swallow.Add(1)
				if _, err := up.Write(set.bytes()); err != nil {
					return
				}
				applied = want
			}
			if q, ok := pk.query(511); ok && strings.Contains(strings.ToLower(q), "time_zone") {
				applied = 0 // the client set its own zone ('+00:00' for Herald's DSNs)
			}
		}
		if _, err := up.Write(pk.bytes()); err != nil {
			return
		}
	}
}
