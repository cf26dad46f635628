package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net"
	"slices"
	"time"
)

// floors are the round trips every publish and delivery pays at least once, measured
// before Herald starts: they bound the latency goals from below.
type floors struct {
	commit, redisRTT string
	background       float64 // cores busy during 1 s before Herald started; -1 unknown
}

// measureFloors times 50 autocommit single-row INSERTs (one redo-log flush each) into
// a scratch table, and 200 Redis PINGs.
func measureFloors(ctx context.Context, db *sql.DB, redisAddr string) floors {
	f := floors{commit: "n/a", redisRTT: "n/a"}
	if d, err := commitTime(ctx, db); err == nil {
		f.commit = d
	} else {
		f.commit = "n/a (" + err.Error() + ")"
	}
	if d, err := redisPing(redisAddr); err == nil {
		f.redisRTT = d
	} else {
		f.redisRTT = "n/a (" + err.Error() + ")"
	}
	return f
}

func commitTime(ctx context.Context, db *sql.DB) (string, error) {
	if _, err := db.ExecContext(ctx, "CREATE TABLE bench_probe (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB"); err != nil {
		return "", err
	}
	defer func() { _, _ = db.ExecContext(context.Background(), "DROP TABLE bench_probe") }()
	var ds []time.Duration
	for range 50 {
		t := time.Now()
		if _, err := db.ExecContext(ctx, "INSERT INTO bench_probe (v) VALUES (1)"); err != nil {
			return "", err
		}
		ds = append(ds, time.Since(t))
	}
	return medianText(ds), nil
}

func redisPing(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(conn)
	var ds []time.Duration
	for range 200 {
		t := time.Now()
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			return "", err
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			return "", err
		}
		if line != "+PONG\r\n" {
			return "", fmt.Errorf("PING answered %q", line)
		}
		ds = append(ds, time.Since(t))
	}
	return medianText(ds), nil
}

func medianText(ds []time.Duration) string {
	slices.Sort(ds)
	return fmt.Sprintf("median %s (p90 %s, n=%d)", ms(pct(ds, 0.5)), ms(pct(ds, 0.9)), len(ds))
}
