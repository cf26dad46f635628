package main

import (
	"context"
	"encoding/json"
	"flag"
	"strconv"
	"time"

	"github.com/heraldhq/herald/client"
)

// resendRow prints a resend's counts.
func resendPrint(s *session, group string, r *client.ResendResult) error {
	return s.print(r, []string{"GROUP", "QUEUED", "SKIPPED"}, [][]string{{group, itoa(r.Queued), itoa(r.Skipped)}})
}

// queueCommand is a skip or resume of a blocked queue (--queue) of a group ordered by queue.
func queueCommand(name, summary, example string, call func(*client.Client, context.Context, string, int64) (*client.BlockedQueue, error)) cliCommand {
	return cliCommand{name: name, args: "<group>", nargs: 1, summary: summary, example: example,
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			queue := fs.Int64("queue", 0, "the blocked queue's id (required; 'herald group stats <group>' lists them)")
			return func(ctx context.Context, s *session, a []string) error {
				if *queue < 1 {
					return usagef("herald %s needs --queue <queue id>", name)
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				b, err := call(s.c, ctx, a[0], *queue)
				if err != nil {
					return orderingHint(ctx, s, a[0], "queue", err)
				}
				return s.print(b, blockedQueueHead, [][]string{blockedQueueRow(*b)})
			}
		}}
}

var blockedQueueHead = []string{"QUEUE", "HEAD", "COUNT", "ATTEMPTS", "NEXT-ATTEMPT", "PAUSED", "ACTION"}

func blockedQueueRow(b client.BlockedQueue) []string {
	next := "-"
	if b.NextAttemptAt != nil {
		next = *b.NextAttemptAt
	}
	return []string{itoa(b.Queue), b.MessageID, itoa(b.Count), itoa(b.Attempts), next, strconv.FormatBool(b.Paused), orDash(b.Action)}
}

var groupActionCommands = []cliCommand{
	{name: "group rotate-secret", args: "<group>", nargs: 1,
		summary: "Give a group a new signing secret (shown once). The previous one keeps signing beside it for\n" +
			"--overlap (default 24h), so receivers can switch without losing a delivery.",
		example: "  herald group rotate-secret billing\n  herald group rotate-secret billing --overlap 1h --json | jq -r .signing_secret",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			overlap := fs.Duration("overlap", 0, "how long the previous secret keeps signing, whole seconds (default 24h)")
			return func(ctx context.Context, s *session, a []string) error {
				if *overlap < 0 || *overlap%time.Second != 0 {
					return usagef("--overlap must be a positive number of whole seconds, e.g. 90s or 2h")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				g, err := s.c.RotateGroupSecret(ctx, a[0], *overlap)
				if err != nil {
					return err
				}
				until := "-"
				if g.PreviousSecretExpiresAt != nil {
					until = *g.PreviousSecretExpiresAt
				}
				return s.print(g, []string{"GROUP", "SIGNING-SECRET", "PREVIOUS-SIGNS-UNTIL"}, [][]string{{g.Name, g.SigningSecret, until}})
			}
		}},
	{name: "group test", args: "<group>", nargs: 1,
		summary: "POST a signed sample (or --body) to the group's endpoint as a delivery would go, and show the answer.\n" +
			"A refused POST is shown with its error class and exits 1.",
		example: "  herald group test billing\n  herald group test billing --body '{\"type\": \"ping\"}' --json",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			body := fs.String("body", "", "a JSON value to send instead of Herald's sample (- reads standard input)")
			return func(ctx context.Context, s *session, a []string) error {
				var raw json.RawMessage
				if setFlags(fs)["body"] {
					b, err := readBody(*body)
					if err != nil {
						return err
					}
					if !json.Valid(b) {
						return usagef("--body must be JSON")
					}
					raw = b
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				r, err := s.c.TestGroup(ctx, a[0], raw)
				if err != nil {
					return err
				}
				if err := s.print(r, []string{"GROUP", "OK", "STATUS", "OUTCOME", "LATENCY-MS", "ERROR"},
					[][]string{{a[0], strconv.FormatBool(r.OK), itoa(r.StatusCode), r.Outcome, itoa(r.LatencyMS), orDash(r.Error)}}); err != nil {
					return err
				}
				if !r.OK {
					return errTestFailed
				}
				return nil
			}
		}},
	{name: "group resend", args: "<group> <message-id>", nargs: 2,
		summary: "Send one message (msg_…) the group already got to it again, through its retry topic at its rate.",
		example: "  herald group resend billing msg_12_408",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				r, err := s.c.ResendMessage(ctx, a[0], a[1])
				if err != nil {
					return err
				}
				return resendPrint(s, a[0], r)
			}
		}},
	{name: "group resend-range", args: "<group>", nargs: 1,
		summary: "Send a range of messages the group already got to it again: one --queue from --from-offset to\n" +
			"--to-offset (inclusive), or those published in [--from-time, --to-time).",
		example: "  herald group resend-range billing --queue 12 --from-offset 400 --to-offset 450\n" +
			"  herald group resend-range billing --from-time 2026-01-02T10:00:00Z --to-time 2026-01-02T11:00:00Z",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			var r client.ResendRange
			fs.Int64Var(&r.Queue, "queue", 0, "queue id, with --from-offset and --to-offset")
			fs.Int64Var(&r.FromOffset, "from-offset", 0, "first offset (inclusive)")
			fs.Int64Var(&r.ToOffset, "to-offset", 0, "last offset (inclusive)")
			from := fs.String("from-time", "", "first publish time, RFC 3339 (inclusive)")
			to := fs.String("to-time", "", "end publish time, RFC 3339 (exclusive)")
			return func(ctx context.Context, s *session, a []string) error {
				for _, p := range []struct {
					name, raw string
					dst       **time.Time
				}{{"from-time", *from, &r.FromTime}, {"to-time", *to, &r.ToTime}} {
					if p.raw == "" {
						continue
					}
					t, err := time.Parse(time.RFC3339Nano, p.raw)
					if err != nil {
						return usagef("--%s: %q is not an RFC 3339 time", p.name, p.raw)
					}
					*p.dst = &t
				}
				if r.Queue == 0 && r.FromTime == nil && r.ToTime == nil {
					return usagef("herald group resend-range needs --queue with offsets, or --from-time and --to-time")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				out, err := s.c.ResendMessages(ctx, a[0], r)
				if err != nil {
					return err
				}
				return resendPrint(s, a[0], out)
			}
		}},
	{name: "group attempts", args: "<group>", nargs: 1,
		summary: "Search a group's delivery attempts, newest first (--limit of them; the next page's cursor goes to stderr).",
		example: "  herald group attempts billing --status-class 5xx\n" +
			"  herald group attempts billing --error-class timeout --since 2026-01-02T00:00:00Z --json",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			var q client.AttemptQuery
			fs.StringVar(&q.Status, "status", "", "only this HTTP status, e.g. 503")
			fs.StringVar(&q.StatusClass, "status-class", "", "only 2xx, 3xx, 4xx or 5xx")
			fs.StringVar(&q.ErrorClass, "error-class", "", "only this error class, e.g. timeout, connection, http_5xx")
			fs.StringVar(&q.Since, "since", "", "only attempts at or after this RFC 3339 time")
			fs.StringVar(&q.Until, "until", "", "only attempts before this RFC 3339 time")
			limit := fs.Int("limit", 50, "attempts per page, 1 to 500")
			cursor := fs.String("cursor", "", "the page after this cursor")
			return func(ctx context.Context, s *session, a []string) error {
				if *limit < 1 || *limit > 500 {
					return usagef("--limit must be 1 to 500")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				p, err := s.c.ListAttempts(ctx, a[0], q, client.ListOptions{Limit: *limit, Cursor: *cursor})
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(p.Items))
				for _, at := range p.Items {
					rows = append(rows, append([]string{at.MessageID}, attemptRow(at.Attempt)...))
				}
				morePages(p.NextCursor)
				return s.print(nonNil(p.Items), append([]string{"MESSAGE"}, attemptHead...), rows)
			}
		}},
	{name: "group offsets", args: "<group>", nargs: 1, summary: "Show a group's cursors: per queue its offset, lag and owner.",
		example: "  herald group offsets billing\n  herald group offsets billing --json | jq 'map(.lag) | add'",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				cs, err := s.c.GroupOffsets(ctx, a[0])
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(cs))
				for _, c := range cs {
					rows = append(rows, []string{c.Topic, itoa(c.Queue), itoa(c.Offset), itoa(c.MaxOffset), itoa(c.Lag),
						strconv.FormatFloat(c.LagSeconds, 'f', 1, 64), itoa(c.OpenHoles), orDash(c.Owner)})
				}
				return s.print(nonNil(cs), []string{"TOPIC", "QUEUE", "OFFSET", "MAX-OFFSET", "LAG", "LAG-S", "OPEN-HOLES", "OWNER"}, rows)
			}
		}},
	queueCommand("group queue-skip", "Skip the failed head messages a blocked queue of a group ordered by queue waits on: they\n"+
		"become dead letters and the queue goes on. Applied by the owning dispatcher within a heartbeat.",
		"  herald group stats billing   # BLOCKED-QUEUES\n  herald group queue-skip billing --queue 12", (*client.Client).SkipBlockedQueue),
	queueCommand("group queue-resume", "Send the messages a blocked queue waits on again now, with a fresh count of attempts (also\n"+
		"after a pause on exhausted attempts). Applied by the owning dispatcher within a heartbeat.",
		"  herald group queue-resume billing --queue 12", (*client.Client).ResumeBlockedQueue),
}
