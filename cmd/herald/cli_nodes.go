package main

import (
	"bufio"
	"context"
	"flag"
	"os"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/client"
)

var nodeHead = []string{"ID", "NAME", "STATE", "WEIGHT", "QUEUES", "DSN", "CREATED"}

func nodeRows(ns ...client.Node) [][]string {
	rows := make([][]string, 0, len(ns))
	for _, n := range ns {
		rows = append(rows, []string{itoa(n.ID), n.Name, n.State, itoa(n.Weight), itoa(n.Queues), n.DSN, n.CreatedAt})
	}
	return rows
}

// nodeID reads a node id argument.
func nodeID(cmd, arg string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id < 1 {
		return 0, usagef("herald node %s takes a numeric node id, not %q", cmd, arg)
	}
	return id, nil
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
	return cliCommand{name: "node " + verb, args: "<id>", nargs: 1, summary: summary,
		example: "  herald node " + verb + " 2",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				id, err := nodeID(verb, a[0])
				if err != nil {
					return err
				}
				if err := s.auth(ctx); err != nil {
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
	{name: "node list", args: "", nargs: 0, summary: "List db nodes (DSNs masked), retired ones included.",
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
				return s.print(nonNil(ns), nodeHead, nodeRows(ns...))
			}
		}},
	{name: "node patch", args: "<id>", nargs: 1,
		summary: "Change a node's name, DSN (checked by connecting) or weight; only the flags given change.",
		example: "  herald node patch 2 --weight 200\n  herald node patch 2 --dsn - < new-dsn.txt",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			name := fs.String("name", "", "new name")
			dsn := fs.String("dsn", "", "new DSN (- reads it from standard input)")
			weight := fs.Int("weight", 0, "share of new queues among read-write nodes, 1 to 10000")
			return func(ctx context.Context, s *session, a []string) error {
				id, err := nodeID("patch", a[0])
				if err != nil {
					return err
				}
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
					if p["dsn"], err = readDSN(d.(string)); err != nil {
						return err
					}
				}
				if err := s.auth(ctx); err != nil {
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
	{name: "node drain", args: "<id>", nargs: 1,
		summary: "Stop placing queues on a node and move every topic on it to the other read-write nodes (node 1 cannot drain).",
		example: "  herald node drain 2\n  herald topic get orders   # move progress per old queue and group",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				id, err := nodeID("drain", a[0])
				if err != nil {
					return err
				}
				if err := s.auth(ctx); err != nil {
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
}
