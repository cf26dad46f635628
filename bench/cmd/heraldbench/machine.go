package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// machine describes where the benchmark ran.
type machine struct {
	nproc                      int
	cpuModel, memTotal, kernel string
	goVersion, commit, mariadb string
	innodb                     string
}

func describeMachine(ctx context.Context, db *sql.DB) machine {
	m := machine{nproc: runtime.NumCPU(), goVersion: runtime.Version(), cpuModel: "unknown", memTotal: "unknown", kernel: "unknown", commit: "unknown", mariadb: "unknown"}
	m.cpuModel = procField("/proc/cpuinfo", "model name")
	m.memTotal = procField("/proc/meminfo", "MemTotal")
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(cctx, "git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.commit = strings.TrimSpace(string(out))
	}
	if db != nil {
		_ = db.QueryRowContext(cctx, "SELECT VERSION()").Scan(&m.mariadb)
		var flush, pool int64
		if db.QueryRowContext(cctx, "SELECT @@innodb_flush_log_at_trx_commit, @@innodb_buffer_pool_size").Scan(&flush, &pool) == nil {
			m.innodb = fmt.Sprintf("innodb_flush_log_at_trx_commit=%d, innodb_buffer_pool_size=%d MiB", flush, pool>>20)
		}
	}
	return m
}

// procField returns the value of the first "key : value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
