package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/heraldhq/herald/client"
)

var messageSummaryHead = []string{"ID", "QUEUE", "OFFSET", "TAG", "KEY", "CONTENT-TYPE", "BYTES", "PUBLISHED"}

func messageSummaryRow(m client.MessageSummary) []string {
	return []string{m.ID, itoa(m.Queue), itoa(m.Offset), orDash(m.Tag), orDash(m.Key), m.ContentType, itoa(m.BodyBytes), m.PublishedAt}
}

var attemptHead = []string{"ATTEMPT", "STATUS", "ERROR-CLASS", "LATENCY-MS", "AT", "WEBHOOK-ID"}

func attemptRow(a client.Attempt) []string {
	return []string{itoa(a.Attempt), itoa(a.Status), orDash(a.ErrorClass), itoa(a.LatencyMS), a.At, a.WebhookID}
}

// readBody returns data, or all of standard input when data is "-".
func readBody(data string) ([]byte, error) {
	if data != "-" {
		return []byte(data), nil
	}
	b, err := io.ReadAll(os.Stdin)
	if err != nil {
		return nil, fmt.Errorf("read standard input: %w", err)
	}
	return b, nil
}

var messageCommands = []cliCommand{
	{name: "message publish", args: "<topic>", nargs: 1,
		summary: "Publish one message to a topic with a publisher API key (--api-key or HERALD_API_KEY, hk_…). A body\n" +
			"that is valid JSON goes as JSON unless --content-type says otherwise; any other body goes as text/plain.\n" +
			"The publish carries an Idempotency-Key, so the CLI's own retries never store it twice. --delay or\n" +
			"--deliver-at parks the message until then (its id is dly_…, which 'herald message cancel' takes).",
		example: "  herald message publish orders --data '{\"id\": 42}' --key customer-42 --tag created\n" +
			"  herald message publish reminders --data '{\"user\": 7}' --delay 30m\n" +
			"  herald message publish orders --data - --content-type application/xml < order.xml\n" +
			"  herald message publish orders --data '{}' --header x-region=eu --idempotency-key order-42 --json",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			key := fs.String("api-key", os.Getenv("HERALD_API_KEY"), "publisher API key hk_… (HERALD_API_KEY)")
			data := fs.String("data", "", "the message body (required; - reads it from standard input)")
			ct := fs.String("content-type", "", "the body's content type (default: application/json for a JSON body, else text/plain)")
			mkey := fs.String("key", "", "message key: one key, one queue, delivered in publish order")
			tag := fs.String("tag", "", "tag that subscriptions filter on")
			idem := fs.String("idempotency-key", "", "Idempotency-Key: the same key and body within 24 h is stored once (default: random)")
			headers := headersFlag{}
			fs.Var(headers, "header", "x-name=value: an x-* header passed to receivers (repeatable)")
			delay := fs.Duration("delay", 0, "deliver no earlier than this long from now (whole seconds, 1s to 8760h)")
			deliverAt := fs.String("deliver-at", "", "deliver no earlier than this RFC 3339 time (a past time means now)")
			return func(ctx context.Context, s *session, a []string) error {
				if *key == "" {
					return usagef("herald message publish needs --api-key or HERALD_API_KEY (create one with 'herald key create')")
				}
				if !setFlags(fs)["data"] {
					return usagef("herald message publish needs --data (- reads standard input)")
				}
				body, err := readBody(*data)
				if err != nil {
					return err
				}
				m := client.Message{Body: body, ContentType: *ct, Key: *mkey, Tag: *tag, Delay: *delay}
				if setFlags(fs)["delay"] && *delay <= 0 {
					return usagef("--delay must be positive, e.g. 30s or 2h")
				}
				if *deliverAt != "" {
					if m.DeliverAt, err = time.Parse(time.RFC3339Nano, *deliverAt); err != nil {
						return usagef("--deliver-at: want an RFC 3339 time such as 2026-01-02T09:00:00Z")
					}
				}
				if m.ContentType == "" && !json.Valid(body) {
					m.ContentType = "text/plain; charset=utf-8"
				}
				if len(headers) > 0 {
					m.Headers = headers
				}
				var opts []client.PublishOption
				if *idem != "" {
					opts = append(opts, client.WithIdempotencyKey(*idem))
				}
				pub := client.New(s.url, client.WithAPIKey(*key))
				ps, err := pub.Publish(ctx, a[0], []client.Message{m}, opts...)
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(ps))
				for _, p := range ps {
					rows = append(rows, []string{p.ID, a[0], itoa(p.Queue), itoa(p.Offset), orDash(p.DeliverAt)})
				}
				var out any = ps
				if len(ps) == 1 {
					out = ps[0]
				}
				return s.print(out, []string{"ID", "TOPIC", "QUEUE", "OFFSET", "DELIVER-AT"}, rows)
			}
		}},
	{name: "message list", args: "<topic>", nargs: 1,
		summary: "Browse a topic's stored messages (no bodies), --limit at a time; filter by --key, --tag or publish time.\n" +
			"When more are stored, the cursor for the next page is written to stderr.",
		example: "  herald message list orders --key customer-42\n" +
			"  herald message list orders --from 2026-01-02T00:00:00Z --to 2026-01-03T00:00:00Z --limit 500 --json",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			var q client.MessageQuery
			fs.StringVar(&q.Key, "key", "", "only messages with this key")
			fs.StringVar(&q.Tag, "tag", "", "only messages with this tag")
			fs.StringVar(&q.From, "from", "", "only messages published at or after this RFC 3339 time")
			fs.StringVar(&q.To, "to", "", "only messages published before this RFC 3339 time")
			limit := fs.Int("limit", 50, "messages per page, 1 to 500")
			cursor := fs.String("cursor", "", "the page after this cursor (from a previous list)")
			return func(ctx context.Context, s *session, a []string) error {
				if *limit < 1 || *limit > 500 {
					return usagef("--limit must be 1 to 500")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				p, err := s.c.ListMessages(ctx, a[0], q, client.ListOptions{Limit: *limit, Cursor: *cursor})
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(p.Items))
				for _, m := range p.Items {
					rows = append(rows, messageSummaryRow(m))
				}
				morePages(p.NextCursor)
				return s.print(nonNil(p.Items), messageSummaryHead, rows)
			}
		}},
	{name: "message get", args: "<id>", nargs: 1,
		summary: "Show a message (msg_…) with its body and every delivery attempt of it, per group; a batch POST\n" +
			"(bat_…, a batch's webhook-id) with its member messages and attempts; or a delayed message (dly_…)\n" +
			"that waits for its time.",
		example: "  herald message get msg_12_408\n  herald message get bat_3f2a… --json",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				if client.IsBatchID(a[0]) {
					return printBatch(ctx, s, a[0])
				}
				m, err := s.c.GetMessage(ctx, a[0])
				if err != nil {
					return err
				}
				waiting := m.State != ""
				if s.json && waiting {
					return s.print(waitingMessage(m), nil, nil)
				}
				if s.json {
					return s.print(m, nil, nil)
				}
				row := messageSummaryRow(m.MessageSummary)
				if waiting {
					fmt.Fprintf(s.out, "%s: %s, due %s\n", m.ID, m.State, m.DeliverAt)
					row[1], row[2] = "-", "-" // its queue and offset are chosen when it is due
				}
				if err := s.print(nil, append([]string{"TOPIC"}, messageSummaryHead...), [][]string{append([]string{m.Topic}, row...)}); err != nil {
					return err
				}
				body := string(m.Body)
				if m.BodyBase64 != nil {
					body = "(base64) " + *m.BodyBase64
				}
				fmt.Fprintf(s.out, "\nbody: %s\n\n", body)
				if waiting {
					return nil // not sent yet: no attempts
				}
				rows := make([][]string, 0, len(m.DeliveryAttempts))
				for _, at := range m.DeliveryAttempts {
					rows = append(rows, append([]string{at.Group}, attemptRow(at.Attempt)...))
				}
				return s.print(nil, append([]string{"GROUP"}, attemptHead...), rows)
			}
		}},
	{name: "message cancel", args: "<id>", nargs: 1,
		summary: "Cancel a delayed message (dly_…) that is not yet due: it is never delivered. Operators and admins.",
		example: "  herald message cancel dly_42",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				if err := s.c.CancelMessage(ctx, a[0]); err != nil {
					return err
				}
				fmt.Fprintf(s.out, "cancelled %s\n", a[0])
				return nil
			}
		}},
}

// printBatch prints batch POST id: its group and members, then its attempts.
func printBatch(ctx context.Context, s *session, id string) error {
	b, err := s.c.GetBatch(ctx, id)
	if err != nil {
		return err
	}
	if s.json {
		return s.print(b, nil, nil)
	}
	if err := s.print(nil, []string{"BATCH", "GROUP", "MESSAGES"}, [][]string{{b.ID, b.Group, itoa(len(b.Messages))}}); err != nil {
		return err
	}
	fmt.Fprintln(s.out)
	rows := make([][]string, 0, len(b.DeliveryAttempts))
	for _, at := range b.DeliveryAttempts {
		rows = append(rows, append([]string{at.Message}, attemptRow(at.Attempt)...))
	}
	return s.print(nil, append([]string{"MESSAGE"}, attemptHead...), rows)
}

// waitingMessage is a delayed message (dly_…) as --json shows it: the fields the
// API gives one that waits, without a queue, offset or attempts it does not have.
func waitingMessage(m *client.MessageDetail) any {
	return struct {
		ID          string            `json:"id"`
		State       string            `json:"state"`
		DeliverAt   string            `json:"deliver_at"`
		Topic       string            `json:"topic"`
		Tag         string            `json:"tag"`
		Key         string            `json:"key"`
		ContentType string            `json:"content_type"`
		BodyBytes   int64             `json:"body_bytes"`
		PublishedAt string            `json:"published_at"`
		Headers     map[string]string `json:"headers"`
		TraceID     string            `json:"trace_id"`
		Body        json.RawMessage   `json:"body,omitempty"`
		BodyBase64  *string           `json:"body_base64,omitempty"`
	}{m.ID, m.State, m.DeliverAt, m.Topic, m.Tag, m.Key, m.ContentType, m.BodyBytes, m.PublishedAt, m.Headers, m.TraceID, m.Body, m.BodyBase64}
}
