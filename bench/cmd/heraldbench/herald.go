package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// heraldProc is one `herald all` subprocess and the settings it was started with.
type heraldProc struct {
	cmd     *exec.Cmd
	baseURL string
	metrics string // host:port of Herald's /metrics listener
	logPath string
	exited  chan struct{}
	waitErr error
}

// heraldSettings are the HERALD_* values of one benchmark run.
type heraldSettings struct {
	binary    string
	dsn       string // go-sql-driver DSN of the bench database
	redisAddr string
	namespace string
	httpAddr  string
	admin     string
	password  string
	extra     []string // NAME=value settings from -herald-env
}

// environ returns the process environment without any HERALD_* variable, plus ours.
func (s heraldSettings) environ(metricsAddr string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HERALD_") {
			env = append(env, kv)
		}
	}
	return append(append(env,
		"HERALD_MYSQL_DSN="+s.dsn,
		"HERALD_REDIS_ADDR="+s.redisAddr,
		"HERALD_NAMESPACE="+s.namespace,
		"HERALD_HTTP_ADDR="+s.httpAddr,
		"HERALD_METRICS_ADDR="+metricsAddr,
		"HERALD_JWT_SECRET="+randomHex(32),
		"HERALD_ADMIN_USER="+s.admin,
		"HERALD_ADMIN_PASSWORD="+s.password,
		"HERALD_ALLOW_PRIVATE_ENDPOINTS=true",
	), s.extra...)
}

// recreateDatabase drops and creates the database named in dsn (utf8mb4), connecting
// with the same credentials but no default database.
func recreateDatabase(ctx context.Context, dsn string) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("parse dsn: %w", err)
	}
	name := cfg.DBName
	if name == "" || strings.ContainsAny(name, "`") {
		return fmt.Errorf("bad database name %q", name)
	}
	cfg.DBName = ""
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range []string{
		"DROP DATABASE IF EXISTS `" + name + "`",
		"CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// migrateUp runs `herald migrate up` and returns its output on failure.
func migrateUp(ctx context.Context, s heraldSettings) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.binary, "migrate", "up")
	cmd.Env = s.environ("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("herald migrate up: %w\n%s", err, out)
	}
	return nil
}

// startHerald starts `herald all` with stdout and stderr written to logPath.
func startHerald(s heraldSettings, logPath string) (*heraldProc, error) {
	return startRole(s, "all", logPath)
}

// startRole starts `herald <role>` with stdout and stderr written to logPath.
func startRole(s heraldSettings, role, logPath string) (*heraldProc, error) {
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.binary, role)
	cmd.Env = s.environ(metrics)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s %s: %w", s.binary, role, err)
	}
	p := &heraldProc{cmd: cmd, baseURL: "http://" + s.httpAddr, metrics: metrics, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *heraldProc) pid() int { return p.cmd.Process.Pid }

// alive reports whether the subprocess is still running.
func (p *heraldProc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// waitReady polls GET /readyz until it answers 200, the process exits or timeout passes.
func (p *heraldProc) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.baseURL+"/readyz", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-p.exited:
			return fmt.Errorf("herald exited before ready (%v); see %s", p.waitErr, p.logPath)
		case <-ctx.Done():
			return fmt.Errorf("herald not ready after %s (last: %s); see %s", timeout, last, p.logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and, after grace, SIGKILL; it returns how the process ended.
func (p *heraldProc) stop(grace time.Duration) string {
	if !p.alive() {
		return fmt.Sprintf("already exited (%v)", p.waitErr)
	}
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return fmt.Sprintf("stopped by SIGTERM in %s (%v)", time.Since(start).Round(time.Millisecond), exitText(p.waitErr))
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return fmt.Sprintf("did not stop within %s of SIGTERM; killed", grace)
}

func exitText(err error) string {
	var ee *exec.ExitError
	if err == nil {
		return "exit 0"
	}
	if errors.As(err, &ee) {
		return ee.String()
	}
	return err.Error()
}

// freeAddr returns a loopback host:port that was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
