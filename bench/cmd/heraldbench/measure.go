package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/heraldhq/herald/bench/internal/procstat"
)

// processes are the pids CPU is charged to; 0 means not found.
type processes struct {
	herald, mariadb, redis int
}

// cpuSnap is the CPU time each process, this benchmark and the whole machine had
// used at one moment.
type cpuSnap struct {
	at                           time.Time
	herald, mariadb, redis, self time.Duration
	busy, total                  time.Duration
}

func (p processes) snap() cpuSnap {
	read := func(pid int) time.Duration {
		if pid == 0 {
			return -1
		}
		d, err := procstat.CPU(pid)
		if err != nil {
			return -1
		}
		return d
	}
	s := cpuSnap{at: time.Now(), herald: read(p.herald), mariadb: read(p.mariadb), redis: read(p.redis), self: read(os.Getpid())}
	var err error
	if s.busy, s.total, err = procstat.Machine(); err != nil {
		s.busy, s.total = -1, -1
	}
	return s
}

// cpuUse is the CPU each process used between two snaps.
type cpuUse struct {
	wall                         time.Duration
	herald, mariadb, redis, self time.Duration // -1: unknown
	busy, total                  time.Duration // whole machine, all CPUs
}

func (a cpuSnap) until(b cpuSnap) cpuUse {
	d := func(x, y time.Duration) time.Duration {
		if x < 0 || y < 0 {
			return -1
		}
		return y - x
	}
	return cpuUse{wall: b.at.Sub(a.at), herald: d(a.herald, b.herald), mariadb: d(a.mariadb, b.mariadb), redis: d(a.redis, b.redis),
		self: d(a.self, b.self), busy: d(a.busy, b.busy), total: d(a.total, b.total)}
}

// perMessage is the CPU-ms of Herald + MariaDB + Redis together per one of n units;
// 0 when any of the three is unknown or n is not positive.
func (u cpuUse) perMessage(n int) float64 {
	if u.herald < 0 || u.mariadb < 0 || u.redis < 0 || n <= 0 {
		return 0
	}
	return float64(u.herald+u.mariadb+u.redis) / float64(time.Millisecond) / float64(n)
}

// addCPURows adds one row per process and one for Herald + MariaDB + Redis together:
// CPU ms per p.unit and cores busy. A positive goalMs (CPU-ms per unit of the three
// processes together) makes the last a checked row.
func (r *result) addCPURows(phase string, u cpuUse, p per, goalMs float64) {
	var sum time.Duration
	known := true
	for _, proc := range []struct {
		name string
		d    time.Duration
	}{{"Herald", u.herald}, {"MariaDB", u.mariadb}, {"Redis", u.redis}} {
		metric := proc.name + " CPU per " + p.unit + phase
		if proc.d < 0 || p.n <= 0 {
			known = false
			r.info(metric, "n/a")
			continue
		}
		sum += proc.d
		r.info(metric, cpuPer(proc.d, u.wall, p.n))
	}
	metric := "Herald + MariaDB + Redis CPU per " + p.unit + phase
	switch {
	case known:
		r.ceiling(metric, cpuPer(sum, u.wall, p.n), float64(sum)/float64(time.Millisecond)/float64(p.n), goalMs, " ms")
	case goalMs > 0:
		r.check(metric, "n/a", fmt.Sprintf("≤ %g ms", goalMs), false)
	}
	r.machineRow(phase, u)
}

// cpuPer formats CPU time d spent over wall for n units: ms per unit, µs, cores.
func cpuPer(d, wall time.Duration, n int) string {
	per := float64(d) / float64(time.Millisecond) / float64(n)
	return fmt.Sprintf("%.4f ms (%.0f µs; %.2f cores over %s)", per, per*1000, float64(d)/float64(wall), wall.Round(time.Millisecond))
}

// machineRow adds how many cores the machine, this benchmark and other processes used.
func (r *result) machineRow(phase string, u cpuUse) {
	if u.self >= 0 && u.busy >= 0 && u.total > 0 {
		ncpu := float64(u.total) / float64(u.wall)
		others := u.busy - u.self
		for _, d := range []time.Duration{u.herald, u.mariadb, u.redis} {
			others -= max(d, 0)
		}
		oc := max(float64(others)/float64(u.wall), 0)
		r.sharedCores = max(r.sharedCores, oc)
		r.info("CPU busy"+phase, fmt.Sprintf("machine %.2f of %.0f cores; this benchmark %.2f; other processes %.2f",
			float64(u.busy)/float64(u.wall), ncpu, float64(u.self)/float64(u.wall), oc))
	}
}

// backgroundLoad returns the cores busy over d before anything starts.
func backgroundLoad(d time.Duration) (float64, error) {
	b0, _, err := procstat.Machine()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	time.Sleep(d)
	b1, _, err := procstat.Machine()
	if err != nil {
		return 0, err
	}
	return float64(b1-b0) / float64(time.Since(start)), nil
}

// peakRSSRow adds Herald's VmHWM since the last reset.
func (r *result) peakRSSRow(pid int, resetOK bool) {
	v, err := procstat.PeakRSS(pid)
	if err != nil {
		r.info("Herald peak RSS", "n/a ("+err.Error()+")")
		return
	}
	scope := "since this scenario began"
	if !resetOK {
		scope = "since Herald started"
	}
	r.info("Herald peak RSS", fmt.Sprintf("%.1f MiB (%s)", float64(v)/(1<<20), scope))
}

// storageUse is the on-disk size of a topic's queue tables.
type storageUse struct {
	bytes, rows int64
}

// queueStorage runs ANALYZE TABLE on the queue tables and sums data_length +
// index_length from information_schema.TABLES, with exact row counts.
func queueStorage(ctx context.Context, db *sql.DB, schema string, queueIDs []int64) (storageUse, error) {
	var u storageUse
	names := make([]string, len(queueIDs))
	args := []any{schema}
	for i, id := range queueIDs {
		names[i] = queueTable(id)
		args = append(args, names[i])
		if _, err := db.ExecContext(ctx, "ANALYZE TABLE `"+names[i]+"`"); err != nil {
			return u, fmt.Errorf("analyze %s: %w", names[i], err)
		}
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+names[i]+"`").Scan(&n); err != nil {
			return u, fmt.Errorf("count %s: %w", names[i], err)
		}
		u.rows += n
	}
	q := "SELECT COALESCE(SUM(data_length + index_length), 0), COUNT(*) FROM information_schema.TABLES WHERE table_schema = ? AND table_name IN (?" +
		strings.Repeat(",?", len(names)-1) + ")"
	var found int
	if err := db.QueryRowContext(ctx, q, args...).Scan(&u.bytes, &found); err != nil {
		return u, fmt.Errorf("size of queue tables: %w", err)
	}
	if found != len(names) {
		return u, fmt.Errorf("information_schema lists %d of %d queue tables %v", found, len(names), names)
	}
	return u, nil
}

// storageRow adds MySQL bytes per message for the scenario's topic.
func (r *result) storageRow(ctx context.Context, db *sql.DB, schema string, queueIDs []int64) {
	u, err := queueStorage(ctx, db, schema, queueIDs)
	switch {
	case err != nil:
		r.info("MySQL bytes per message", "n/a ("+err.Error()+")")
	case u.rows == 0:
		r.info("MySQL bytes per message", fmt.Sprintf("n/a (0 rows, %d bytes)", u.bytes))
	default:
		per := float64(u.bytes) / float64(u.rows)
		r.info("MySQL bytes per message", fmt.Sprintf("%.0f B (%.1f MiB / %d rows, data+index after ANALYZE)", per, float64(u.bytes)/(1<<20), u.rows))
		r.info("MySQL disk per day at 1,000 msg/s", fmt.Sprintf("%.0f GB (86.4 M messages of this scenario's size)", per*86_400_000/1e9))
	}
}

// queueTable is the table holding queue id: "queue_" and the id in at least six
// digits (models.QueueTableName, repeated here so the benchmark does not
// depend on Herald's packages).
func queueTable(id int64) string { return fmt.Sprintf("queue_%06d", id) }
