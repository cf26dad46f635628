package main

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// nodeServer is a private mariadbd scenario n starts as a second db node: its own
// data directory under a temporary directory, a free loopback port, root without a
// password, configured as the first private server (binary log off, 512 MiB buffer
// pool, utf8mb4), with database `schema` created on it.
type nodeServer struct {
	dir, addr, schema string
	cmd               *exec.Cmd
	exited            chan struct{}
	db                *sql.DB
}

// startNodeServer initialises a data directory, starts mariadbd, waits until it
// answers and creates database schema. On error everything started is stopped.
func startNodeServer(ctx context.Context, schema string) (_ *nodeServer, err error) {
	dir, err := os.MkdirTemp("", "heraldbench-node-")
	if err != nil {
		return nil, err
	}
	s := &nodeServer{dir: dir, schema: schema}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	data := filepath.Join(dir, "mariadb")
	install := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+data,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--user="+currentUser())
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %w\n%s", err, tail(string(out), 800))
	}
	if s.addr, err = freeAddr(); err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(s.addr)
	s.cmd = exec.Command(mariadbdPath(), "--no-defaults", "--datadir="+data, "--bind-address=127.0.0.1", "--port="+port,
		"--socket="+filepath.Join(dir, "mariadb.sock"), "--pid-file="+filepath.Join(dir, "mariadb.pid"), "--user="+currentUser(),
		"--skip-log-bin", "--innodb-buffer-pool-size=512M", "--max-connections=500", "--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_unicode_ci", "--log-error="+filepath.Join(dir, "mariadb.err"))
	if s.exited, err = startDetached(s.cmd); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	root, err := sql.Open("mysql", "root@tcp("+s.addr+")/")
	if err != nil {
		return nil, err
	}
	defer root.Close()
	end := time.Now().Add(60 * time.Second)
	for {
		perr := root.PingContext(ctx)
		if perr == nil {
			break
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("node mariadbd exited: %s", tail(readFile(filepath.Join(dir, "mariadb.err")), 800))
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(end) {
			return nil, fmt.Errorf("node mariadbd not up after 60s: %v", perr)
		}
	}
	if _, err := root.ExecContext(ctx, "CREATE DATABASE `"+schema+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		return nil, fmt.Errorf("create database %s: %w", schema, err)
	}
	if s.db, err = sql.Open("mysql", s.dsn()); err != nil {
		return nil, err
	}
	return s, nil
}

// dsn is the DSN of the node's database, as Herald is given it.
func (s *nodeServer) dsn() string { return "root@tcp(" + s.addr + ")/" + s.schema }

func (s *nodeServer) pid() int { return s.cmd.Process.Pid }

// stop closes the benchmark's pool, sends SIGTERM by pid (SIGKILL after 20 s) and
// removes the directory. It is safe on a partly started value.
func (s *nodeServer) stop() {
	if s.db != nil {
		s.db.Close()
	}
	if s.cmd != nil && s.cmd.Process != nil && s.exited != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	_ = os.RemoveAll(s.dir)
}

// stopNodeServers stops every node server scenario n started; run defers it so it
// runs after Herald has stopped.
func (b *bench) stopNodeServers() {
	for _, s := range b.nodeServers {
		s.stop()
	}
	b.nodeServers = nil
}
