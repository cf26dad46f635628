package heraldtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// MariaDBStartTimeout bounds how long StartMariaDB waits for a fresh server to
// answer (60 s: the data directory's install takes about 5 s on an idle machine).
const MariaDBStartTimeout = 60 * time.Second

// StartMariaDB starts a private MariaDB server for one test, as a second db node: a
// fresh data directory (mariadb-install-db), mariadbd on a free loopback port with
// no option files, binary log off and a 32 MiB buffer pool, root without a
// password. It creates database name on it (utf8mb4) and returns the DSN of that
// database. The server is stopped by its PID (SIGTERM, then SIGKILL after 20 s) and
// its directory removed when the test ends. mariadb-install-db and mariadbd must be
// on PATH or in /usr/sbin and /usr/bin; their absence fails the test.
func StartMariaDB(t testing.TB, name string) string {
	t.Helper()
	server, err := findBinary("mariadbd")
	require.NoError(t, err, "a second db node needs mariadbd installed")
	install, err := findBinary("mariadb-install-db")
	require.NoError(t, err, "a second db node needs mariadb-install-db installed")
	dir, err := os.MkdirTemp("", "herald-mdb-") // short: the socket path must fit 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	// Its own TMPDIR: servers sharing /tmp for internal temporary tables have lost
	// them to each other (mariadb-install-db failing on "#sql-temptable-…").
	env := append(os.Environ(), "TMPDIR="+dir)
	installCmd := exec.Command(install, "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal",
		"--user=root", "--skip-test-db")
	installCmd.Env = env
	out, err := installCmd.CombinedOutput()
	require.NoError(t, err, "mariadb-install-db: %s", out)

	port := freePort(t)
	cmd := exec.Command(server, "--no-defaults", "--datadir="+data, fmt.Sprintf("--port=%d", port),
		"--bind-address=127.0.0.1", "--socket="+filepath.Join(dir, "s"), "--pid-file="+filepath.Join(dir, "pid"),
		"--user=root", "--skip-log-bin", "--innodb-buffer-pool-size=32M", "--log-error="+filepath.Join(dir, "err.log"))
	cmd.Env = env
	require.NoError(t, cmd.Start())
	// exited closes when mariadbd has exited; waitErr (read after that) says how.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", fmt.Sprintf("127.0.0.1:%d", port)
	db, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), MariaDBStartTimeout)
	defer cancel()
	for {
		if err = db.PingContext(ctx); err == nil {
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "err.log"))
			require.FailNow(t, "mariadbd exited", "%v\n%s", waitErr, log)
		case <-ctx.Done():
			require.FailNow(t, "mariadbd did not answer", "%v", err)
		case <-time.After(50 * time.Millisecond): // polling the port: the server gives no other signal that it is up
		}
	}
	_, err = db.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	require.NoError(t, err)
	cfg.DBName = name
	return cfg.FormatDSN()
}

func findBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin"} {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH, /usr/sbin or /usr/bin", name)
}

// freePort returns a loopback TCP port free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
