package heraldtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// RedisServer is one redis-server process a test started (a cluster node, a
// replica or a sentinel) on a loopback port, stopped by PID when the test ends.
type RedisServer struct {
	// Addr is 127.0.0.1:Port.
	Addr string
	// Port is the server's TCP port.
	Port int
	cmd  *exec.Cmd
	done chan struct{}
}

// redisStartTimeout bounds how long a started redis-server may take to answer PING.
const redisStartTimeout = 10 * time.Second

// startRedisServer runs `redis-server <args>` with dir as its working directory
// (its log goes to dir/redis-<port>.log), waits until it answers PING on port and
// kills it (SIGKILL by PID) when the test ends.
func startRedisServer(t testing.TB, dir string, port int, args ...string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	require.NoError(t, err, "redis-server (Redis 7) must be on PATH for cluster and sentinel tests")
	logf, err := os.Create(filepath.Join(dir, "redis-"+strconv.Itoa(port)+".log"))
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
	require.NoError(t, cmd.Start())
	s := &RedisServer{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(s.done) }()
	t.Cleanup(s.Kill)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(redisStartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("redis-server on port %d exited at start:\n%s", port, log)
		case <-time.After(20 * time.Millisecond): // the server is still starting
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d did not answer PING within %s: %v", port, redisStartTimeout, err)
		}
	}
}

// Kill ends the server with SIGKILL (no shutdown, no save: a crash) and waits for
// the process to exit. Killing a dead server does nothing.
func (s *RedisServer) Kill() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// Client returns a client of this one server, closed when the test ends.
func (s *RedisServer) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// freePorts returns n loopback TCP ports that are free, each with port+10000 free
// too (a cluster node's bus port). Ports are probed by listening, so another
// process may still take one before the server binds it; the server then fails to
// start and the test says so.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n && tries < 1000; tries++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := l.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			l.Close()
			continue
		}
		held = append(held, l, bus)
		ports = append(ports, port)
	}
	require.Len(t, ports, n, "no free loopback ports")
	return ports
}

// redisInfo returns one field of INFO section on c ("" when absent).
func redisInfo(ctx context.Context, c *redis.Client, section, field string) string {
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// waitFor polls cond every 50 ms until it holds or within passes; it fails the test
// with what (formatted with args) then.
func waitFor(t testing.TB, within time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, fmt.Sprintf(what, args...))
		}
		time.Sleep(50 * time.Millisecond) // polling a server state that sends no signal
	}
}
