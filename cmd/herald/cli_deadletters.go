package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/heraldhq/herald/client"
)

// selectionFlags pick dead letters: --ids and/or a created-at range.
type selectionFlags struct{ ids, from, to *string }

func registerSelection(fs *flag.FlagSet) selectionFlags {
	return selectionFlags{
		ids:  fs.String("ids", "", "comma-separated dead-letter ids (from 'dead-letters list')"),
		from: fs.String("from", "", "only dead letters created at or after this RFC 3339 time"),
		to:   fs.String("to", "", "only dead letters created before this RFC 3339 time"),
	}
}

func (f selectionFlags) selection() (client.DeadLetterSelection, error) {
	var sel client.DeadLetterSelection
	var err error
	if sel.IDs, err = parseIDs("ids", *f.ids); err != nil {
		return sel, err
	}
	for _, p := range []struct {
		name, raw string
		dst       *time.Time
	}{{"from", *f.from, &sel.From}, {"to", *f.to, &sel.To}} {
		if p.raw == "" {
			continue
		}
		if *p.dst, err = time.Parse(time.RFC3339Nano, p.raw); err != nil {
			return sel, usagef("--%s: %q is not an RFC 3339 time", p.name, p.raw)
		}
	}
	return sel, nil
}

func (f selectionFlags) empty() bool { return *f.ids == "" && *f.from == "" && *f.to == "" }

// deadLetterAction is redrive or purge.
func deadLetterAction(name, summary, example, verb string, call func(*client.Client, context.Context, string, client.DeadLetterSelection) (int64, error)) cliCommand {
	return cliCommand{name: name, args: "<group>", nargs: 1, summary: summary, example: example,
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			sf := registerSelection(fs)
			all := fs.Bool("all", false, "select every pending dead letter of the group (required without --ids, --from or --to)")
			return func(ctx context.Context, s *session, a []string) error {
				if sf.empty() && !*all {
					return usagef("herald %s needs --ids, --from/--to or --all", name)
				}
				sel, err := sf.selection()
				if err != nil {
					return err
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				n, err := call(s.c, ctx, a[0], sel)
				if err != nil {
					return err
				}
				return s.print(map[string]int64{verb: n}, []string{"GROUP", verbHead(verb)}, [][]string{{a[0], itoa(n)}})
			}
		}}
}

var deadLetterHead = []string{"ID", "MESSAGE", "STATE", "ATTEMPTS", "LAST-STATUS", "LAST-ERROR", "CREATED"}

func deadLetterRow(d client.DeadLetter) []string {
	return []string{itoa(d.ID), d.MessageID, d.State, itoa(d.Attempts), itoa(d.LastStatus), orDash(d.LastError), d.CreatedAt}
}

func verbHead(v string) string {
	if v == "redriven" {
		return "REDRIVEN"
	}
	return "PURGED"
}

var deadLetterCommands = []cliCommand{
	{name: "dead-letters list", args: "<group>", nargs: 1,
		summary: "List a group's dead letters (every page), by id: the pending ones, or those in --state. Dead letters in\n" +
			"every state are kept for the group's dead_letter_retention_hours, then deleted by maintenance.",
		example: "  herald dead-letters list billing\n  herald dead-letters list billing --state all --output json | jq -r '.[] | [.id, .state] | @tsv'",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			state := fs.String("state", "pending", "all, pending, redriven or purged")
			return func(ctx context.Context, s *session, a []string) error {
				filter := *state
				switch filter {
				case "all":
					filter = client.DeadLettersAll
				case client.DeadLettersPending, client.DeadLettersRedriven, client.DeadLettersPurged:
				default:
					return usagef("--state must be all, pending, redriven or purged, not %q", filter)
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				ds, err := listAll(ctx, func(ctx context.Context, o client.ListOptions) (*client.Page[client.DeadLetter], error) {
					return s.c.ListDeadLetters(ctx, a[0], filter, o)
				})
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(ds))
				for _, d := range ds {
					rows = append(rows, deadLetterRow(d))
				}
				return s.print(nonNil(ds), deadLetterHead, rows)
			}
		}},
	{name: "dead-letters get", args: "<group> <id>", nargs: 2,
		summary: "Show one dead letter of a group (any state) with the group's delivery attempts of its message.",
		example: "  herald dead-letters get billing 17\n  herald dead-letters get billing 17 --json | jq .delivery_attempts",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				id, err := strconv.ParseInt(a[1], 10, 64)
				if err != nil || id < 1 {
					return usagef("herald dead-letters get takes a numeric dead-letter id (from 'dead-letters list'), not %q", a[1])
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				d, err := s.c.GetDeadLetter(ctx, a[0], id)
				if err != nil {
					return err
				}
				if s.json {
					return s.print(d, nil, nil)
				}
				if err := s.print(nil, deadLetterHead, [][]string{deadLetterRow(d.DeadLetter)}); err != nil {
					return err
				}
				_, _ = fmt.Fprintln(s.out)
				rows := make([][]string, 0, len(d.DeliveryAttempts))
				for _, at := range d.DeliveryAttempts {
					rows = append(rows, attemptRow(at))
				}
				return s.print(nil, attemptHead, rows)
			}
		}},
	deadLetterAction("dead-letters redrive", "Send dead letters back to the group's retry topic (attempt 1, at the group's rate, once).",
		"  herald dead-letters redrive billing --ids 17,18\n  herald dead-letters redrive billing --all\n  herald dead-letters redrive billing --from 2026-01-02T00:00:00Z --to 2026-01-03T00:00:00Z",
		"redriven", (*client.Client).RedriveDeadLetters),
	deadLetterAction("dead-letters purge", "Drop dead letters for good.",
		"  herald dead-letters purge billing --ids 17\n  herald dead-letters purge billing --all",
		"purged", (*client.Client).PurgeDeadLetters),
}
