package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// print writes v as indented JSON with --output json, else the table head + rows.
func (s *session) print(v any, head []string, rows [][]string) error {
	if s.json {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		_, _ = fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// report writes the answer v of a change as JSON with --output json, else line.
func (s *session) report(v any, line string) error {
	if s.json {
		return s.print(v, nil, nil)
	}
	_, err := fmt.Fprintln(s.out, line)
	return err
}

func itoa[T ~int | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// readLine returns the first line of standard input, without its line end.
func readLine() (string, error) {
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
