package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"
)

// counters reads exact command counts: Redis INFO commandstats (calls per command,
// including commands run inside Lua scripts) and MariaDB SHOW GLOBAL STATUS
// (Questions and Com_*). Each read adds one INFO call and one Questions/Com_show_status
// of its own; delta subtracts them.
type counters struct {
	rdb *redis.Client
	db  *sql.DB
}

// countSnap is one reading of both servers' counters.
type countSnap struct {
	at    time.Time
	redis map[string]int64 // command → calls
	mysql map[string]int64 // Questions, Com_* → count
	err   error
}

func (c counters) snap(ctx context.Context) countSnap {
	s := countSnap{at: time.Now(), redis: map[string]int64{}, mysql: map[string]int64{}}
	info := "" // a counters without rdb reads MariaDB alone (a second db node)
	if c.rdb != nil {
		var err error
		if info, err = c.rdb.Info(ctx, "commandstats").Result(); err != nil {
			s.err = fmt.Errorf("redis INFO commandstats: %w", err)
			return s
		}
	}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		s.redis[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	rows, err := c.db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name = 'Questions' OR Variable_name LIKE 'Com\\_%'")
	if err != nil {
		s.err = fmt.Errorf("SHOW GLOBAL STATUS: %w", err)
		return s
	}
	defer rows.Close()
	for rows.Next() {
		var name, v string
		if err := rows.Scan(&name, &v); err != nil {
			s.err = err
			return s
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			s.mysql[name] = n
		}
	}
	s.err = rows.Err()
	return s
}

// status returns one counter of SHOW GLOBAL STATUS, e.g. Com_update (letters, digits
// and underscores only: SHOW takes no placeholders).
func (c counters) status(ctx context.Context, name string) (int64, error) {
	if strings.ContainsFunc(name, func(r rune) bool { return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		return 0, fmt.Errorf("status variable %q: want letters, digits and underscores", name)
	}
	var k string
	var v int64
	if err := c.db.QueryRowContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name = '"+name+"'").Scan(&k, &v); err != nil {
		return 0, fmt.Errorf("SHOW GLOBAL STATUS LIKE %s: %w", name, err)
	}
	return v, nil
}

// countUse is what the servers executed between two snaps, the benchmark's own
// counter reads removed.
type countUse struct {
	wall         time.Duration
	redis, mysql map[string]int64
	redisTotal   int64
	questions    int64
	err          error
}

func (a countSnap) until(b countSnap) countUse {
	u := countUse{wall: b.at.Sub(a.at), redis: map[string]int64{}, mysql: map[string]int64{}, err: cmp.Or(a.err, b.err)}
	if u.err != nil {
		return u
	}
	for k, v := range b.redis {
		if d := v - a.redis[k]; d > 0 {
			u.redis[k] = d
		}
	}
	u.redis["info"]-- // the second snap's INFO
	if u.redis["info"] <= 0 {
		delete(u.redis, "info")
	}
	for k, v := range b.mysql {
		if d := v - a.mysql[k]; d > 0 {
			u.mysql[k] = d
		}
	}
	u.mysql["Questions"]-- // the second snap's SHOW STATUS
	u.mysql["Com_show_status"]--
	for _, v := range u.redis {
		u.redisTotal += v
	}
	u.questions = max(u.mysql["Questions"], 0)
	delete(u.mysql, "Questions")
	return u
}

// top lists the entries of m, largest first, as "name count" pairs divided by div
// (with the raw count when the quotient rounds to 0.000); n > 0 keeps the n largest
// and says how many more there were, n ≤ 0 lists them all.
func top(m map[string]int64, n int, div float64) string {
	type kv struct {
		k string
		v int64
	}
	var all []kv
	for k, v := range m {
		if v > 0 {
			all = append(all, kv{k, v})
		}
	}
	slices.SortFunc(all, func(a, b kv) int { return cmp.Or(cmp.Compare(b.v, a.v), strings.Compare(a.k, b.k)) })
	var parts []string
	for i, e := range all {
		if n > 0 && i == n {
			parts = append(parts, fmt.Sprintf("… %d more", len(all)-n))
			break
		}
		v := fmtRate(float64(e.v) / div)
		if v == "0.000" {
			v = fmt.Sprintf("0.000 (%d in all)", e.v)
		}
		parts = append(parts, e.k+" "+v)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func fmtRate(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 1:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.3f", x)
	}
}

// countGoals are ceilings on exact counts: Redis commands and MySQL statements (Questions)
// per second in addCountRows, per unit in addPerUnitCounts. Zero is no goal.
type countGoals struct {
	redis, mysql float64
}

// per is what per-unit figures are divided by: n units called unit ("message", "delivery").
type per struct {
	n    int
	unit string
}

func perMessage(n int) per { return per{n: n, unit: "message"} }

// addCountRows adds Redis commands and MySQL statements per second, with the largest
// contributors by name; g checks the two rates.
func (r *result) addCountRows(phase string, u countUse, g countGoals) {
	if u.err != nil {
		r.info("command counts"+phase, "n/a ("+u.err.Error()+")")
		return
	}
	secs := u.wall.Seconds()
	redisRate, mysqlRate := float64(u.redisTotal)/secs, float64(u.questions)/secs
	r.ceiling("Redis commands/s"+phase, fmt.Sprintf("%s (%d in %.1f s)", fmtRate(redisRate), u.redisTotal, secs), redisRate, g.redis, "")
	r.info("Redis commands by name, per second"+phase, top(u.redis, 12, secs))
	r.ceiling("MySQL statements/s"+phase, fmt.Sprintf("%s (Questions %d in %.1f s)", fmtRate(mysqlRate), u.questions, secs), mysqlRate, g.mysql, "")
	r.info("MySQL Com_* per second"+phase, top(u.mysql, 10, secs))
}

// addPerUnitCounts adds Redis commands and MySQL statements per p.unit, every Redis
// command and Com_* counter by name so each one can be attributed; g checks the two
// totals per unit.
func (r *result) addPerUnitCounts(phase string, u countUse, p per, g countGoals) {
	if u.err != nil || p.n <= 0 {
		return
	}
	n := float64(p.n)
	redis, mysql := float64(u.redisTotal)/n, float64(u.questions)/n
	r.ceiling("Redis commands per "+p.unit+phase, fmt.Sprintf("%s (%d for %d)", fmtRate(redis), u.redisTotal, p.n), redis, g.redis, "")
	r.info("Redis commands by name, per "+p.unit+phase, top(u.redis, 0, n))
	r.ceiling("MySQL statements per "+p.unit+phase, fmt.Sprintf("%s (Questions %d for %d)", fmtRate(mysql), u.questions, p.n), mysql, g.mysql, "")
	r.info("MySQL Com_* per "+p.unit+phase, top(u.mysql, 0, n))
}
