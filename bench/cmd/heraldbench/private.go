package main

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// privateServers are a mariadbd and a redis-server the benchmark starts for itself
// (own data directory under a temporary directory, own loopback ports), so that
// command counts and CPU figures contain no other client's work. stop ends both by
// pid and removes the directory.
type privateServers struct {
	dir            string
	mysqlAddr      string
	redisAddr      string
	mariadb, redis *exec.Cmd
	mariadbExited  chan struct{}
	redisExited    chan struct{}
}

// startPrivateServers initialises a datadir with mariadb-install-db (root without a
// password), starts mariadbd and redis-server (no persistence) on free ports and
// waits until both answer. On error everything started is stopped again.
func startPrivateServers(ctx context.Context) (_ *privateServers, err error) {
	dir, err := os.MkdirTemp("", "heraldbench-")
	if err != nil {
		return nil, err
	}
	p := &privateServers{dir: dir}
	defer func() {
		if err != nil {
			p.stop()
		}
	}()
	data := filepath.Join(dir, "mariadb")
	install := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+data,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--user="+currentUser())
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %w\n%s", err, tail(string(out), 800))
	}
	if p.mysqlAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	_, mport, _ := net.SplitHostPort(p.mysqlAddr)
	p.mariadb = exec.Command(mariadbdPath(), "--no-defaults", "--datadir="+data, "--bind-address=127.0.0.1", "--port="+mport,
		"--socket="+filepath.Join(dir, "mariadb.sock"), "--pid-file="+filepath.Join(dir, "mariadb.pid"), "--user="+currentUser(),
		"--skip-log-bin", "--innodb-buffer-pool-size=512M", "--max-connections=500", "--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_unicode_ci", "--log-error="+filepath.Join(dir, "mariadb.err"))
	if p.mariadbExited, err = startDetached(p.mariadb); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	if p.redisAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	_, rport, _ := net.SplitHostPort(p.redisAddr)
	p.redis = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", rport, "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if p.redisExited, err = startDetached(p.redis); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	if err := p.waitUp(ctx, 60*time.Second); err != nil {
		return nil, err
	}
	return p, nil
}

// dsn is the DSN of database name on the private MariaDB.
func (p *privateServers) dsn(name string) string { return "root@tcp(" + p.mysqlAddr + ")/" + name }

func (p *privateServers) waitUp(ctx context.Context, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	db, err := sql.Open("mysql", p.dsn(""))
	if err != nil {
		return err
	}
	defer db.Close()
	rdb := redis.NewClient(&redis.Options{Addr: p.redisAddr})
	defer rdb.Close()
	for {
		errDB := db.PingContext(ctx)
		errRedis := rdb.Ping(ctx).Err()
		if errDB == nil && errRedis == nil {
			return nil
		}
		select {
		case <-p.mariadbExited:
			return fmt.Errorf("private mariadbd exited: %s", tail(readFile(filepath.Join(p.dir, "mariadb.err")), 800))
		case <-p.redisExited:
			return fmt.Errorf("private redis-server exited: %s", tail(readFile(filepath.Join(p.dir, "redis.log")), 800))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(end) {
			return fmt.Errorf("private servers not up after %s: mariadb %v; redis %v", timeout, errDB, errRedis)
		}
	}
}

// stop sends SIGTERM to both servers by pid (SIGKILL after 20 s) and removes the
// temporary directory. It is safe on a partly started value.
func (p *privateServers) stop() {
	for _, s := range []struct {
		cmd    *exec.Cmd
		exited chan struct{}
	}{{p.redis, p.redisExited}, {p.mariadb, p.mariadbExited}} {
		if s.cmd == nil || s.cmd.Process == nil || s.exited == nil {
			continue
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	_ = os.RemoveAll(p.dir)
}

// startDetached starts cmd in its own process group (so a Ctrl-C of the benchmark
// reaches it only through stop) and returns a channel closed when it exits.
func startDetached(cmd *exec.Cmd) (chan struct{}, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	return exited, nil
}

func mariadbdPath() string {
	for _, name := range []string{"mariadbd", "/usr/sbin/mariadbd", "/usr/libexec/mariadbd"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return "mariadbd"
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	return ""
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
