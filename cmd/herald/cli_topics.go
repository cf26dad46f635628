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
		rows = append(rows, []string{t.Name, itoa(len(t.Queues)), orDash(strings.Join(ro, ",")), itoa(t.PublishedLastHour),
			itoa(t.RetentionHours), t.RetentionPolicy, t.CreatedAt})
	}
	return rows
}

var topicHead = []string{"NAME", "QUEUES", "READ-ONLY", "PUBLISHED/1H", "RETENTION-H", "POLICY", "CREATED"}

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
	{name: "topic create", args: "<name>", nargs: 1, summary: "Create a topic with --queues partitions and its retention.",
		example: "  herald topic create orders --queues 4\n  herald topic create audit --retention-hours 720 --retention-policy strict",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			queues := fs.Int("queues", 0, "number of queues, 1 to 64 (default 4)")
			hours := fs.Int("retention-hours", 0, "hours a message is kept, 1 to 8760 (default 168)")
			policy := fs.String("retention-policy", "", "consumed (default: an old message goes once every group consumed it)\n"+
				"or strict (it goes after --retention-hours whatever the groups' lag)")
			return func(ctx context.Context, s *session, a []string) error {
				set := setFlags(fs)
				for name, v := range map[string]int{"queues": *queues, "retention-hours": *hours} {
					if set[name] && v <= 0 {
						return usagef("--%s must be a positive number", name)
					}
				}
				if set["retention-policy"] && *policy == "" {
					return usagef("--retention-policy must be consumed or strict")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				t, err := s.c.CreateTopic(ctx, client.TopicSpec{Name: a[0], Queues: *queues, RetentionHours: *hours, RetentionPolicy: *policy})
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
	{name: "topic get", args: "<name>", nargs: 1, summary: "Show a topic's queues: state, db node and offsets; and its moves in progress.",
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
				if s.json {
					return s.print(t, nil, nil)
				}
				names := nodeNames(ctx, s)
				rows := make([][]string, 0, len(t.Queues))
				for _, q := range t.Queues {
					rows = append(rows, []string{t.Name, itoa(q.ID), itoa(q.Position), q.State, nodeText(names, q.Node), itoa(q.MinOffset), itoa(q.MaxOffset)})
				}
				if err := s.print(t, []string{"TOPIC", "QUEUE", "POSITION", "STATE", "NODE", "MIN-OFFSET", "MAX-OFFSET"}, rows); err != nil || len(t.Moves) == 0 {
					return err
				}
				return s.print(t, moveHead, moveRows(t))
			}
		}},
	{name: "topic move", args: "<name>", nargs: 1,
		summary: "Move a topic's queues to db node --to (node 1 re-homes it onto fresh queues); publishing goes on, key order holds.",
		example: "  herald topic move orders --to data-3\n  herald topic move orders --to 1\n" +
			"  herald topic get orders   # remaining per old queue and group until retired",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			to := fs.String("to", "", "id or name of the read-write db node to move the topic to (required)")
			return func(ctx context.Context, s *session, a []string) error {
				if *to == "" {
					return usagef("herald topic move needs --to <node id or name>")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				node, err := resolveNode(ctx, s, *to)
				if err != nil {
					return err
				}
				t, err := s.c.MoveTopic(ctx, a[0], node)
				if err != nil {
					return err
				}
				return s.print(t, moveHead, moveRows(t))
			}
		}},
	{name: "topic patch", args: "<name>", nargs: 1,
		summary: "Grow a topic (--queues), set which queues take no publishes (--read-only) or change its retention.",
		example: "  herald topic patch orders --queues 8\n  herald topic patch orders --read-only 12,13\n" +
			"  herald topic patch orders --read-only ''   # every queue writable again\n" +
			"  herald topic patch orders --retention-hours 48 --retention-policy strict",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			queues := fs.Int("queues", 0, "new number of queues (only grows)")
			ro := fs.String("read-only", "", "comma-separated queue ids that take no publishes (replaces the set; '' for none)")
			hours := fs.Int("retention-hours", 0, "hours a message is kept, 1 to 8760")
			policy := fs.String("retention-policy", "", "consumed or strict")
			return func(ctx context.Context, s *session, a []string) error {
				var p client.TopicPatch
				set := setFlags(fs)
				if set["queues"] {
					p.Queues = queues
				}
				if set["retention-hours"] {
					p.RetentionHours = hours
				}
				if set["retention-policy"] {
					p.RetentionPolicy = policy
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
				if p == (client.TopicPatch{}) {
					return usagef("herald topic patch needs --queues, --read-only, --retention-hours or --retention-policy")
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
	{name: "topic delete", args: "<name>", nargs: 1,
		summary: "Delete a topic and its messages. Refused while a group subscribes (exit 4), unless --force removes\n" +
			"those subscriptions (with their cursors and retries on the topic) first and names the groups.",
		example: "  herald topic delete orders\n  herald topic delete orders --force --output json | jq -r '.unsubscribed_groups[]'",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			force := fs.Bool("force", false, "unsubscribe the groups that subscribe to it first")
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				groups, err := s.c.DeleteTopic(ctx, a[0], *force)
				if err != nil {
					return err
				}
				line := "topic " + a[0] + " deleted"
				if len(groups) > 0 {
					line += "; unsubscribed groups: " + strings.Join(groups, ", ")
				}
				return s.report(map[string]any{"name": a[0], "unsubscribed_groups": nonNil(groups)}, line)
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

var moveHead = []string{"FROM-QUEUE", "TO-QUEUE", "STATE", "WATERMARK", "GROUP", "REMAINING", "RETRIES"}

// moveRows lists a topic's moves, one row per old queue and group.
func moveRows(t *client.Topic) [][]string {
	var rows [][]string
	for _, m := range t.Moves {
		if len(m.Groups) == 0 {
			rows = append(rows, []string{itoa(m.FromQueue), itoa(m.ToQueue), m.State, itoa(m.Watermark), "-", "0", "0"})
		}
		for _, g := range m.Groups {
			rows = append(rows, []string{itoa(m.FromQueue), itoa(m.ToQueue), m.State, itoa(m.Watermark), g.Group, itoa(g.Remaining), itoa(g.Retries)})
		}
	}
	return rows
}
