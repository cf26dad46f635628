package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/client"
)

var nodeHead = []string{"ID", "NAME", "STATE", "HEALTH", "WEIGHT", "QUEUES", "DSN", "CREATED"}

func nodeRows(ns ...client.Node) [][]string {
	rows := make([][]string, 0, len(ns))
	for _, n := range ns {
		rows = append(rows, []string{itoa(n.ID), n.Name, n.State, nodeHealth(n), itoa(n.Weight), itoa(n.Queues), n.DSN, n.CreatedAt})
	}
	return rows
}

// nodeHealth words a node's health for the HEALTH column: "up", "unknown", or
// "down since <time>".
func nodeHealth(n client.Node) string {
	switch {
	case n.Health == "":
		return "unknown"
	case n.Health == "down" && n.HealthSince != "":
		return "down since " + n.HealthSince
	}
	return n.Health
}

// authedNode logs in (session.auth) and returns the id of the db node arg names
// (resolveNode).
func authedNode(ctx context.Context, s *session, arg string) (int64, error) {
	if err := s.auth(ctx); err != nil {
		return 0, err
	}
	return resolveNode(ctx, s, arg)
}

// resolveNode returns the id of the db node arg names: a number is its id, anything
// else its name (looked up in the node list, retired nodes included). An unknown
// name is an error matching client.ErrNotFound (exit 3).
func resolveNode(ctx context.Context, s *session, arg string) (int64, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil {
		if id < 1 {
			return 0, usagef("a node id is a positive number, not %q", arg)
		}
		return id, nil
	}
	if arg == "" {
		return 0, usagef("a node is named by its id or name, not \"\"")
	}
	ns, err := listAll(ctx, s.c.ListNodes)
	if err != nil {
		return 0, err
	}
	for _, n := range ns {
		if n.Name == arg {
			return n.ID, nil
		}
	}
	return 0, fmt.Errorf("no db node named %q (see 'herald node list'): %w", arg, client.ErrNotFound)
}

// readDSN returns dsn, or the first line of standard input when dsn is "-" (so the
// password stays out of the process list and shell history).
func readDSN(dsn string) (string, error) {
	if dsn != "-" {
		return dsn, nil
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", usagef("--dsn - reads the DSN from standard input, which was empty")
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// nodeStateCommand is a node command that only sets the node's state.
func nodeStateCommand(verb, state, summary string) cliCommand {
	return cliCommand{name: "node " + verb, args: "<node>", nargs: 1, summary: summary,
		example: "  herald node " + verb + " 2",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				id, err := authedNode(ctx, s, a[0])
				if err != nil {
					return err
				}
				n, err := s.c.PatchNode(ctx, id, map[string]any{"state": state})
				if err != nil {
					return err
				}
				return s.print(n, nodeHead, nodeRows(*n))
			}
		}}
}

var nodeCommands = []cliCommand{
	{name: "node add", args: "<name>", nargs: 1,
		summary: "Register a MySQL server as a db node; Herald checks --dsn by connecting.",
		example: "  # the server must answer, hold the database and have auto_increment_increment = 1\n" +
			"  herald node add data-2 --dsn 'herald:secret@tcp(db2:3306)/herald' --weight 100\n" +
			"  herald node add data-2 --dsn - < dsn.txt",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			dsn := fs.String("dsn", "", "go-sql-driver DSN naming a database (required; - reads it from standard input)")
			weight := fs.Int("weight", 0, "share of new queues among read-write nodes, 1 to 10000 (default 100)")
			state := fs.String("state", "", "read-only (the default: takes no new queues) or read-write (takes new queues by weight)")
			return func(ctx context.Context, s *session, a []string) error {
				if *dsn == "" {
					return usagef("herald node add needs --dsn")
				}
				d, err := readDSN(*dsn)
				if err != nil {
					return err
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				n, err := s.c.CreateNode(ctx, client.NodeSpec{Name: a[0], DSN: d, Weight: *weight, State: *state})
				if err != nil {
					return err
				}
				return s.print(n, nodeHead, nodeRows(*n))
			}
		}},
	{name: "node list", args: "", nargs: 0, summary: "List db nodes (DSNs masked), retired ones included, with each one's health as the\n" +
		"answering api process sees it (up, or down since when).",
		example: "  herald node list",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, _ []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				ns, err := listAll(ctx, s.c.ListNodes)
				if err != nil {
					return err
				}
				if s.json {
					return s.print(nonNil(ns), nil, nil)
				}
				return s.print(nil, nodeHead, nodeRows(ns...))
			}
		}},
	{name: "node patch", args: "<node>", nargs: 1,
		summary: "Change a node's name, DSN (checked by connecting) or weight; only the flags given change.",
		example: "  herald node patch data-2 --weight 200\n  herald node patch 2 --dsn - < new-dsn.txt",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			name := fs.String("name", "", "new name")
			dsn := fs.String("dsn", "", "new DSN (- reads it from standard input)")
			weight := fs.Int("weight", 0, "share of new queues among read-write nodes, 1 to 10000")
			return func(ctx context.Context, s *session, a []string) error {
				p := map[string]any{}
				fs.Visit(func(f *flag.Flag) {
					switch f.Name {
					case "name":
						p["name"] = *name
					case "dsn":
						p["dsn"] = *dsn
					case "weight":
						p["weight"] = *weight
					}
				})
				if len(p) == 0 {
					return usagef("herald node patch needs at least one of --name, --dsn, --weight")
				}
				if d, ok := p["dsn"]; ok {
					var err error
					if p["dsn"], err = readDSN(d.(string)); err != nil {
						return err
					}
				}
				id, err := authedNode(ctx, s, a[0])
				if err != nil {
					return err
				}
				n, err := s.c.PatchNode(ctx, id, p)
				if err != nil {
					return err
				}
				return s.print(n, nodeHead, nodeRows(*n))
			}
		}},
	nodeStateCommand("open", "read-write", "Let a node take new queues by weight (read-write)."),
	nodeStateCommand("close", "read-only", "Place no more new queues on a node (read-only); its queues keep working."),
	{name: "node drain", args: "<node>", nargs: 1,
		summary: "Stop placing queues on a node and move every topic on it to the other read-write nodes (node 1 cannot drain).",
		example: "  herald node drain data-2\n  herald topic get orders   # move progress per old queue and group",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				id, err := authedNode(ctx, s, a[0])
				if err != nil {
					return err
				}
				d, err := s.c.DrainNode(ctx, id)
				if err != nil {
					return err
				}
				return s.print(d, append(nodeHead, "MOVED-TOPICS"), [][]string{append(nodeRows(d.Node)[0], strings.Join(d.MovedTopics, ","))})
			}
		}},
	nodeStateCommand("retire", "retired", "Retire a node for good; refused while queues are placed on it."),
	{name: "node get", args: "<node>", nargs: 1, summary: "Show one db node (DSN masked); <node> is its id or name.",
		example: "  herald node get data-2\n  herald node get 1 --json",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				id, err := authedNode(ctx, s, a[0])
				if err != nil {
					return err
				}
				n, err := s.c.GetNode(ctx, id)
				if err != nil {
					return err
				}
				return s.print(n, nodeHead, nodeRows(*n))
			}
		}},
}

// nodeNames maps node ids to names for display; nil when the list cannot be read.
func nodeNames(ctx context.Context, s *session) map[int64]string {
	ns, err := listAll(ctx, s.c.ListNodes)
	if err != nil {
		return nil
	}
	out := make(map[int64]string, len(ns))
	for _, n := range ns {
		out[n.ID] = n.Name
	}
	return out
}

// nodeText is a node as `topic get` shows it: its name and id, or the id alone.
func nodeText(names map[int64]string, id int64) string {
	if n, ok := names[id]; ok {
		return n + " (" + itoa(id) + ")"
	}
	return itoa(id)
}
