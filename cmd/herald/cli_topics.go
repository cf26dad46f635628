package main

import (
	"context"
	"flag"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/client"
)

func topicRows(ts ...client.Topic) [][]string {
	rows := make([][]string, 0, len(ts))
	for _, t := range ts {
		var ro []string
		for _, q := range t.Queues {
			if q.State != "read_write" {
				ro = append(ro, itoa(q.ID))
			}
		}
		rows = append(rows, []string{t.Name, itoa(len(t.Queues)), orDash(strings.Join(ro, ",")), itoa(t.PublishedLastHour), t.CreatedAt})
	}
	return rows
}

var topicHead = []string{"NAME", "QUEUES", "READ-ONLY", "PUBLISHED/1H", "CREATED"}

// parseIDs reads a comma-separated list of integers ("" is none).
func parseIDs(flagName, s string) ([]int64, error) {
	var out []int64
	for _, p := range splitList(s) {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, usagef("--%s: %q is not a number", flagName, p)
		}
		out = append(out, n)
	}
	return out, nil
}

// listAll fetches every page of a list.
func listAll[T any](ctx context.Context, fetch func(context.Context, client.ListOptions) (*client.Page[T], error)) ([]T, error) {
	var out []T
	o := client.ListOptions{Limit: 500}
	for {
		p, err := fetch(ctx, o)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Items...)
		if p.NextCursor == "" {
			return out, nil
		}
		o.Cursor = p.NextCursor
	}
}

var topicCommands = []cliCommand{
	{name: "topic create", args: "<name>", nargs: 1, summary: "Create a topic with --queues partitions.",
		example: "  herald topic create orders --queues 4",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			queues := fs.Int("queues", 0, "number of queues (0: the server's default)")
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				t, err := s.c.CreateTopic(ctx, a[0], *queues)
				if err != nil {
					return err
				}
				return s.print(t, topicHead, topicRows(*t))
			}
		}},
	{name: "topic list", args: "", nargs: 0, summary: "List every topic.",
		example: "  herald topic list\n  herald topic list --output json | jq -r '.[].name'",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, _ []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				ts, err := listAll(ctx, s.c.ListTopics)
				if err != nil {
					return err
				}
				return s.print(nonNil(ts), topicHead, topicRows(ts...))
			}
		}},
	{name: "topic get", args: "<name>", nargs: 1, summary: "Show a topic and its queues.",
		example: "  herald topic get orders --output json",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				t, err := s.c.GetTopic(ctx, a[0])
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(t.Queues))
				for _, q := range t.Queues {
					rows = append(rows, []string{t.Name, itoa(q.ID), itoa(q.Position), q.State, itoa(q.MinOffset), itoa(q.MaxOffset)})
				}
				return s.print(t, []string{"TOPIC", "QUEUE", "POSITION", "STATE", "MIN-OFFSET", "MAX-OFFSET"}, rows)
			}
		}},
	{name: "topic patch", args: "<name>", nargs: 1, summary: "Grow a topic (--queues) or set which queues take no publishes (--read-only).",
		example: "  herald topic patch orders --queues 8\n  herald topic patch orders --read-only 12,13\n  herald topic patch orders --read-only ''   # every queue writable again",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			queues := fs.Int("queues", 0, "new number of queues (only grows)")
			ro := fs.String("read-only", "", "comma-separated queue ids that take no publishes (replaces the set; '' for none)")
			return func(ctx context.Context, s *session, a []string) error {
				var p client.TopicPatch
				set := setFlags(fs)
				if set["queues"] {
					p.Queues = queues
				}
				if set["read-only"] {
					ids, err := parseIDs("read-only", *ro)
					if err != nil {
						return err
					}
					if ids == nil {
						ids = []int64{}
					}
					p.ReadOnlyQueues = &ids
				}
				if p.Queues == nil && p.ReadOnlyQueues == nil {
					return usagef("herald topic patch needs --queues or --read-only")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				t, err := s.c.PatchTopic(ctx, a[0], p)
				if err != nil {
					return err
				}
				return s.print(t, topicHead, topicRows(*t))
			}
		}},
	{name: "topic delete", args: "<name>", nargs: 1, summary: "Delete a topic and its messages (refused while a group subscribes: exit 4).",
		example: "  herald topic delete orders",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				if err := s.c.DeleteTopic(ctx, a[0]); err != nil {
					return err
				}
				return s.done("topic " + a[0] + " deleted")
			}
		}},
}

// setFlags names the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// nonNil makes an empty list print as [] in JSON.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
