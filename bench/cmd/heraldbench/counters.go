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
	info, err := c.rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		s.err = fmt.Errorf("redis INFO commandstats: %w", err)
		return s
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
	for k, v := range u.redis {
		_ = k
		u.redisTotal += v
	}
	u.questions = max(u.mysql["Questions"], 0)
	delete(u.mysql, "Questions")
	return u
}

// top lists the n largest entries of m as "name count" pairs, divided by div.
func top(m map[string]int64, n int, div float64, unit string) string {
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
		if i == n {
			parts = append(parts, fmt.Sprintf("… %d more", len(all)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", e.k, fmtRate(float64(e.v)/div)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ") + unit
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

// addCountRows adds Redis commands and MySQL statements per second (idle) or per
// message (msgs > 0), with the largest contributors.
func (r *result) addCountRows(phase string, u countUse, msgs int) {
	if u.err != nil {
		r.info("command counts"+phase, "n/a ("+u.err.Error()+")")
		return
	}
	secs := u.wall.Seconds()
	r.info("Redis commands"+phase, fmt.Sprintf("%d in %.1f s", u.redisTotal, secs))
	r.info("Redis commands by name, per second"+phase, top(u.redis, 12, secs, ""))
	r.info("MySQL statements/s"+phase, fmt.Sprintf("%s (Questions %d in %.1f s)", fmtRate(float64(u.questions)/secs), u.questions, secs))
	r.info("MySQL Com_* per second"+phase, top(u.mysql, 10, secs, ""))
	if msgs > 0 {
		r.info("Redis commands per message"+phase, fmtRate(float64(u.redisTotal)/float64(msgs)))
		r.info("Redis commands by name, per message"+phase, top(u.redis, 12, float64(msgs), ""))
		r.info("MySQL statements per message"+phase, fmtRate(float64(u.questions)/float64(msgs)))
		r.info("MySQL Com_* per message"+phase, top(u.mysql, 10, float64(msgs), ""))
	}
}
