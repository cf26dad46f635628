package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// logSummary counts Herald's log lines by level and keeps its warnings and errors,
// grouped by message.
type logSummary struct {
	path     string
	lines    int
	byLevel  map[string]int
	problems []logProblem
	err      error
}

// logProblem is one distinct WARN/ERROR message (or non-JSON line) and how often it came.
type logProblem struct {
	level, msg, example string
	count               int
}

func scanHeraldLog(path string) logSummary {
	s := logSummary{path: path, byLevel: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		s.err = err
		return s
	}
	defer f.Close()
	idx := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		s.lines++
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Level == "" {
			rec.Level, rec.Msg = "TEXT", line
		}
		s.byLevel[rec.Level]++
		if rec.Level == "INFO" || rec.Level == "DEBUG" {
			continue
		}
		k := rec.Level + "\x00" + rec.Msg
		if i, ok := idx[k]; ok {
			s.problems[i].count++
			continue
		}
		idx[k] = len(s.problems)
		s.problems = append(s.problems, logProblem{level: rec.Level, msg: rec.Msg, example: line, count: 1})
	}
	s.err = sc.Err()
	sort.SliceStable(s.problems, func(i, j int) bool { return s.problems[i].count > s.problems[j].count })
	return s
}

func (s logSummary) levels() string {
	var keys []string
	for k := range s.byLevel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, s.byLevel[k]))
	}
	return strings.Join(parts, ", ")
}

// logTailError returns the last lines of Herald's log as an error, for setup failures.
func logTailError(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return errors.New("last lines of " + path + ":\n" + strings.Join(lines, "\n"))
}
