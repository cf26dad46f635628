package main

import (
	"fmt"
	"strings"
	"time"
)

// report is the markdown written to bench/results/YYYY-MM-DD-HHMM.md.
type report struct {
	when      time.Time
	opts      options
	machine   machine
	namespace string
	floors    floors
	results   []*result
	notes     []string
	stop      string
	log       logSummary
}

func (r report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	m := r.machine
	p("# Herald benchmark, %s", r.when.Format("2006-01-02 15:04 MST"))
	p("")
	p("| | |")
	p("|---|---|")
	p("| machine | %d CPUs, %s, %s RAM, Linux %s |", m.nproc, m.cpuModel, m.memTotal, m.kernel)
	p("| software | git %s, %s, MariaDB %s (%s) |", m.commit, m.goVersion, m.mariadb, m.innodb)
	p("| herald | `%s all`, Redis namespace `%s`, database from `%s` |", r.opts.herald, r.namespace, r.opts.dsn)
	if r.opts.heraldEnv != "" {
		p("| herald settings | `%s` |", r.opts.heraldEnv)
	}
	p("| scenarios | %s (phase timeout %s) |", r.opts.scenarios, r.opts.phaseTimeout)
	p("| floors | MariaDB autocommit INSERT %s; Redis PING %s |", r.floors.commit, r.floors.redisRTT)
	p("| background load | %.2f cores busy in the second before Herald started |", r.floors.background)
	p("")
	p("Herald, MariaDB, Redis and this benchmark (publishers and receiver) share the machine's CPUs. " +
		"CPU is utime+stime from /proc/<pid>/stat over the measured phase, divided by the messages of that phase.")
	p("")
	shared := 0.0
	for _, res := range r.results {
		shared = max(shared, res.sharedCores)
	}
	if shared > 0.25 || r.floors.background > 0.25 {
		servers := "the MariaDB and Redis CPU figures include other clients' work if they use the same servers"
		if r.opts.private {
			servers = "command counts are exact regardless (private servers)"
		}
		p("> **Shared machine:** other processes used up to %.2f cores during a measured phase (%.2f before the start). "+
			"Throughput and latency are then lower than on a quiet machine; %s.", shared, r.floors.background, servers)
		p("")
	}

	p("## Goals")
	p("")
	p("| scenario | figure | value | goal | result |")
	p("|---|---|---|---|---|")
	for _, res := range r.results {
		if res.err != nil {
			p("| %s | scenario | error: %s | | MISS |", res.key, cell(res.err.Error()))
		}
		for _, row := range res.rows {
			if row.verdict != "" {
				p("| %s | %s | %s | %s | **%s** |", res.key, row.metric, cell(row.value), row.goal, row.verdict)
			}
		}
	}
	p("")

	for _, res := range r.results {
		p("## (%s) %s", res.key, res.title)
		p("")
		if len(res.rows) > 0 {
			p("| figure | value | goal | result |")
			p("|---|---|---|---|")
			for _, row := range res.rows {
				p("| %s | %s | %s | %s |", row.metric, cell(row.value), row.goal, row.verdict)
			}
			p("")
		}
		if res.err != nil {
			p("**Stopped early:** `%s`", cell(res.err.Error()))
			p("")
		}
		for _, n := range res.notes {
			p("- %s", n)
		}
		if len(res.notes) > 0 {
			p("")
		}
	}

	p("## Run")
	p("")
	p("- Herald: %s.", r.stop)
	for _, n := range r.notes {
		p("- %s", n)
	}
	if r.log.err != nil {
		p("- Herald log %s: %v", r.log.path, r.log.err)
	} else {
		p("- Herald log `%s`: %d lines (%s).", r.log.path, r.log.lines, r.log.levels())
	}
	for i, pr := range r.log.problems {
		if i == 10 {
			p("- … %d more distinct warnings/errors", len(r.log.problems)-10)
			break
		}
		ex := pr.example
		if len(ex) > 400 {
			ex = ex[:400] + "…"
		}
		p("- %s ×%d: `%s`", pr.level, pr.count, cell(ex))
	}
	return b.String()
}

// cell makes text safe inside a markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "`", "'")
}
