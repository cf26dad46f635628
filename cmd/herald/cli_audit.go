package main

import (
	"context"
	"flag"

	"github.com/heraldhq/herald/client"
)

var auditCommands = []cliCommand{
	{name: "audit-log list", args: "", nargs: 0,
		summary: "Show the audit log, newest first (role admin): who changed what, when, from where. --limit entries;\n" +
			"the next page's cursor goes to stderr.",
		example: "  herald audit-log list --actor admin --action group.\n  herald audit-log list --limit 500 --json | jq '.[] | select(.action == \"group.delete\")'",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			var q client.AuditQuery
			fs.StringVar(&q.Actor, "actor", "", "only entries by this username")
			fs.StringVar(&q.Action, "action", "", "only this action, e.g. group.update; a trailing . matches a prefix (group.)")
			limit := fs.Int("limit", 50, "entries per page, 1 to 500")
			cursor := fs.String("cursor", "", "the page after this cursor")
			return func(ctx context.Context, s *session, _ []string) error {
				if *limit < 1 || *limit > 500 {
					return usagef("--limit must be 1 to 500")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				p, err := s.c.ListAudit(ctx, q, client.ListOptions{Limit: *limit, Cursor: *cursor})
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(p.Items))
				for _, e := range p.Items {
					rows = append(rows, []string{itoa(e.ID), e.CreatedAt, e.Actor, e.Action, e.Subject, orDash(e.SourceIP)})
				}
				morePages(p.NextCursor)
				return s.print(nonNil(p.Items), []string{"ID", "AT", "ACTOR", "ACTION", "SUBJECT", "SOURCE-IP"}, rows)
			}
		}},
}
