package main

import "fmt"

// result is one scenario's figures, in the order they are reported.
type result struct {
	key, title string
	rows       []row
	notes      []string
	err        error
	// sharedCores is the most CPU (in cores) that processes other than Herald,
	// MariaDB, Redis and the benchmark used during a measured phase.
	sharedCores float64
}

// row is one figure; goal and verdict (PASS or MISS) are empty for plain figures.
type row struct {
	metric, value, goal, verdict string
}

func (r *result) info(metric, value string) {
	r.rows = append(r.rows, row{metric: metric, value: value})
}

// check adds a figure with its goal and PASS or MISS.
func (r *result) check(metric, value, goal string, pass bool) {
	v := "MISS"
	if pass {
		v = "PASS"
	}
	r.rows = append(r.rows, row{metric, value, goal, v})
}

// ceiling adds a figure x that is checked against "≤ goal" (goal written with suffix,
// e.g. " ms") when goal > 0, a plain one otherwise.
func (r *result) ceiling(metric, value string, x, goal float64, suffix string) {
	if goal > 0 {
		r.check(metric, value, fmt.Sprintf("≤ %g%s", goal, suffix), x <= goal)
		return
	}
	r.info(metric, value)
}

func (r *result) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// fail records the error that ended the scenario early.
func (r *result) fail(err error) *result {
	r.err = err
	return r
}
