package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestNodeReturnsAfterOutage: a topic's 4 queues split 2/2 over node 1 (the control
// database) and node 2 (a private mariadbd). While node 2's server is killed with
// SIGKILL, keyless single-message publishes are stored on node 1's queues (those
// refused are refused with 503 and Retry-After, never 500) and delivered. When node
// 2 comes back on the same data directory and port (InnoDB crash recovery), its
// queues take keyless messages again, and every message ever answered 201, before,
// during and after the outage, is delivered: nothing is lost. TestNodeOutageIsLocal
// covers the outage itself (keyed 503s, /readyz, the metric).
func TestNodeReturnsAfterOutage(t *testing.T) {
	t.Parallel()
	srv := startKillableMariaDB(t, "herald_node2")
	h := heraldtest.StartHerald(t, nil)
	h.Admin("POST", "/nodes", map[string]any{"name": "data-2", "dsn": srv.dsn(), "weight": 100, "state": "read-write"}, 201)
	out := h.Admin("POST", "/topics", map[string]any{"name": "outage", "queues": 4}, 201)
	var topic struct {
		Queues []struct {
			ID   int64 `json:"id"`
			Node int64 `json:"node"`
		} `json:"queues"`
	}
	require.NoError(t, json.Unmarshal(out, &topic))
	nodeOf := map[int64]int64{}
	perNode := map[int64]int{}
	for _, q := range topic.Queues {
		nodeOf[q.ID] = q.Node
		perNode[q.Node]++
	}
	require.Equal(t, map[int64]int{1: 2, 2: 2}, perNode, "equal weights place 2 queues on each node")

	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "consume_from": "earliest",
		"subscriptions": []map[string]any{{"topic": "outage"}}}))
	key := h.CreateAPIKey("outage")
	var accepted []string // every id answered 201
	publish := func(n int) (byNode map[int64]int, failed int) {
		byNode = map[int64]int{}
		for i := range n {
			code, body, hdr := h.Do("POST", "/v1/topics/outage/messages", key, map[string]any{"messages": []map[string]any{{"body": map[string]int{"n": i}}}})
			if code != 201 {
				require.Equal(t, 503, code, "a publish failing for a dead node is retryable: %s", body)
				require.NotEmpty(t, hdr.Get("Retry-After"), "503 carries Retry-After")
				failed++
				continue
			}
			var res struct{ Messages []heraldtest.Published }
			require.NoError(t, json.Unmarshal(body, &res))
			require.Len(t, res.Messages, 1)
			accepted = append(accepted, res.Messages[0].ID)
			byNode[nodeOf[res.Messages[0].Queue]]++
		}
		return byNode, failed
	}

	// Both nodes up: keyless requests go to both nodes' queues.
	byNode, failed := publish(20)
	require.Zero(t, failed)
	require.Positive(t, byNode[2], "keyless publishes reach node 2's queues while it is up")
	r.WaitCount(len(accepted), 30*time.Second)

	// Node 2 killed: publishing and delivery carry on with node 1's queues.
	srv.kill(t)
	byNode, failed = publish(40)
	require.Positive(t, byNode[1], "keyless publishes keep succeeding on node 1's queues while node 2 is down")
	require.Zero(t, byNode[2], "no publish is answered 201 for a dead node")
	require.Equal(t, 40, byNode[1]+failed)
	t.Logf("node 2 down: %d of 40 keyless publishes stored on node 1, %d answered 503", byNode[1], failed)
	r.WaitCount(len(accepted), 30*time.Second) // node 1's messages are delivered meanwhile

	// Node 2 back: its queues take messages again; nothing answered 201 is lost.
	srv.restart(t)
	require.Eventually(t, func() bool {
		byNode, failed = publish(4)
		return failed == 0 && byNode[2] > 0
	}, 60*time.Second, 500*time.Millisecond, "node 2's queues take keyless messages again after it returns")
	r.WaitIDs(accepted, 60*time.Second) // nothing answered 201 is lost
}

// killableMariaDB is a private mariadbd that a test can SIGKILL and start again on
// the same data directory and port (heraldtest.StartMariaDB stops its server only
// when the test ends).
type killableMariaDB struct {
	dir, data, addr, schema string
	cmd                     *exec.Cmd
	exited                  chan struct{}
}

// startKillableMariaDB installs a data directory, starts mariadbd on a free
// loopback port and creates database schema (utf8mb4). The server is stopped by its
// pid when the test ends.
func startKillableMariaDB(t *testing.T, schema string) *killableMariaDB {
	t.Helper()
	dir, err := os.MkdirTemp("", "herald-kdb-") // short: the socket path must fit 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &killableMariaDB{dir: dir, data: filepath.Join(dir, "data"), schema: schema}
	install := exec.Command(mariadbBinary(t, "mariadb-install-db"), "--no-defaults", "--datadir="+s.data,
		"--auth-root-authentication-method=normal", "--user=root", "--skip-test-db")
	install.Env = append(os.Environ(), "TMPDIR="+dir) // its own, as heraldtest.StartMariaDB's
	out, err := install.CombinedOutput()
	require.NoError(t, err, "mariadb-install-db: %s", out)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.addr = ln.Addr().String()
	ln.Close()
	s.start(t)
	t.Cleanup(func() { s.stop() })
	db, err := sql.Open("mysql", "root@tcp("+s.addr+")/")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE DATABASE `" + schema + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	require.NoError(t, err)
	return s
}

func (s *killableMariaDB) dsn() string { return "root@tcp(" + s.addr + ")/" + s.schema }

// start runs mariadbd on s's data directory and port and waits until it answers.
func (s *killableMariaDB) start(t *testing.T) {
	t.Helper()
	_, port, _ := net.SplitHostPort(s.addr)
	s.cmd = exec.Command(mariadbBinary(t, "mariadbd"), "--no-defaults", "--datadir="+s.data, "--port="+port,
		"--bind-address=127.0.0.1", "--socket="+filepath.Join(s.dir, "s"), "--pid-file="+filepath.Join(s.dir, "pid"),
		"--user=root", "--skip-log-bin", "--innodb-buffer-pool-size=32M", "--log-error="+filepath.Join(s.dir, "err.log"))
	s.cmd.Env = append(os.Environ(), "TMPDIR="+s.dir)
	require.NoError(t, s.cmd.Start())
	exited := make(chan struct{})
	s.exited = exited
	go func() { _ = s.cmd.Wait(); close(exited) }()
	db, err := sql.Open("mysql", "root@tcp("+s.addr+")/")
	require.NoError(t, err)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), heraldtest.MariaDBStartTimeout)
	defer cancel()
	for db.PingContext(ctx) != nil {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(s.dir, "err.log"))
			require.FailNow(t, "mariadbd exited", "%s", log)
		case <-ctx.Done():
			require.FailNow(t, "mariadbd did not answer")
		case <-time.After(50 * time.Millisecond): // the server gives no other signal that it is up
		}
	}
}

// kill sends SIGKILL to the server by pid and waits for it to exit.
func (s *killableMariaDB) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGKILL))
	<-s.exited
}

// restart starts the server again on the same data directory and port (InnoDB
// crash recovery runs first).
func (s *killableMariaDB) restart(t *testing.T) { s.start(t) }

// stop ends a running server by pid: SIGTERM, SIGKILL after 20 s.
func (s *killableMariaDB) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// mariadbBinary finds a MariaDB program on PATH or in /usr/sbin and /usr/bin.
func mariadbBinary(t *testing.T, name string) string {
	t.Helper()
	for _, p := range []string{name, "/usr/sbin/" + name, "/usr/bin/" + name} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	require.FailNow(t, fmt.Sprintf("a second db node needs %s installed", name))
	return ""
}
