package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/client"
)

// subscriptionsFlag collects --subscribe topic[:tag,tag…] (repeatable).
type subscriptionsFlag []client.Subscription

func (f *subscriptionsFlag) String() string { return "" }

func (f *subscriptionsFlag) Set(v string) error {
	topic, tags, _ := strings.Cut(v, ":")
	if topic == "" {
		return fmt.Errorf("want topic or topic:tag1,tag2")
	}
	*f = append(*f, client.Subscription{Topic: topic, Tags: nonNil(splitList(tags))})
	return nil
}

// groupSettingFlags are the writable settings as flags, shared by create and patch.
type groupSettingFlags struct {
	endpoint                                   string
	subs                                       subscriptionsFlag
	batchSize, batchMaxBytes, batchWindowMS    int
	maxInFlight, rateLimit, timeoutMS, retries int
	retrySchedule, consumeFrom                 string
	ordered                                    bool
}

func (g *groupSettingFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.endpoint, "endpoint", "", "endpoint URL Herald POSTs to")
	fs.Var(&g.subs, "subscribe", "topic or topic:tag1,tag2 (repeat for several; replaces them all on patch)")
	fs.IntVar(&g.batchSize, "batch-size", 0, "messages per POST (1 = classic webhook)")
	fs.IntVar(&g.batchMaxBytes, "batch-max-bytes", 0, "body bytes per POST")
	fs.IntVar(&g.batchWindowMS, "batch-window-ms", 0, "ms a partial batch may wait for more")
	fs.IntVar(&g.maxInFlight, "max-in-flight", 0, "POSTs in flight at once")
	fs.IntVar(&g.rateLimit, "rate-limit", 0, "messages per second (0 = unlimited)")
	fs.IntVar(&g.timeoutMS, "timeout-ms", 0, "POST timeout in ms (at most 30000)")
	fs.IntVar(&g.retries, "max-attempts", 0, "attempts before a message becomes a dead letter")
	fs.StringVar(&g.retrySchedule, "retry-schedule", "", "comma-separated seconds between attempts, e.g. 5,300,1800")
	fs.BoolVar(&g.ordered, "ordered", false, "deliver each key's messages in order, one at a time")
	fs.StringVar(&g.consumeFrom, "consume-from", "", "where a new group starts: earliest or latest")
}

// patch is the merge patch of the flags given on the command line.
func (g *groupSettingFlags) patch(fs *flag.FlagSet) (map[string]any, error) {
	p := map[string]any{}
	var err error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "endpoint":
			p["endpoint_url"] = g.endpoint
		case "subscribe":
			p["subscriptions"] = g.subs
		case "batch-size":
			p["batch_size"] = g.batchSize
		case "batch-max-bytes":
			p["batch_max_bytes"] = g.batchMaxBytes
		case "batch-window-ms":
			p["batch_window_ms"] = g.batchWindowMS
		case "max-in-flight":
			p["max_in_flight"] = g.maxInFlight
		case "rate-limit":
			p["rate_limit"] = g.rateLimit
		case "timeout-ms":
			p["timeout_ms"] = g.timeoutMS
		case "max-attempts":
			p["max_attempts"] = g.retries
		case "retry-schedule":
			var secs []int
			for _, s := range splitList(g.retrySchedule) {
				n, cerr := strconv.Atoi(s)
				if cerr != nil {
					err = usagef("--retry-schedule: %q is not a number of seconds", s)
				}
				secs = append(secs, n)
			}
			p["retry_schedule"] = nonNil(secs)
		case "ordered":
			p["ordered"] = g.ordered
		case "consume-from":
			p["consume_from"] = g.consumeFrom
		}
	})
	return p, err
}

var groupHead = []string{"NAME", "STATUS", "ENDPOINT", "SUBSCRIPTIONS", "BATCH", "IN-FLIGHT", "RATE", "TIMEOUT-MS"}

func groupRows(gs ...client.Group) [][]string {
	rows := make([][]string, 0, len(gs))
	for _, g := range gs {
		var subs []string
		for _, s := range g.Subscriptions {
			if len(s.Tags) > 0 {
				subs = append(subs, s.Topic+":"+strings.Join(s.Tags, ","))
			} else {
				subs = append(subs, s.Topic)
			}
		}
		rows = append(rows, []string{g.Name, g.Status, g.EndpointURL, orDash(strings.Join(subs, " ")), itoa(g.BatchSize),
			itoa(g.MaxInFlight), itoa(g.RateLimit), itoa(g.TimeoutMS)})
	}
	return rows
}

// groupCommand is a command on one named group that prints the group it returns.
func groupCommand(name, summary, example string, call func(*client.Client, context.Context, string) (*client.Group, error)) cliCommand {
	return cliCommand{name: name, args: "<group>", nargs: 1, summary: summary, example: example,
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				g, err := call(s.c, ctx, a[0])
				if err != nil {
					return err
				}
				return s.print(g, groupHead, groupRows(*g))
			}
		}}
}

var groupCommands = []cliCommand{
	{name: "group create", args: "<name>", nargs: 1,
		summary: "Create a consumer group: an endpoint, its subscriptions and delivery settings (unset numbers take\n" +
			"the server's defaults). The answer shows the signing secret (whsec_…) once.",
		example: "  herald group create billing --endpoint https://billing.example.com/hook --subscribe orders:created,paid\n" +
			"  herald group create audit --endpoint https://audit.example.com/in --subscribe orders --subscribe refunds \\\n" +
			"      --batch-size 50 --rate-limit 200 --consume-from earliest --output json | jq -r .signing_secret",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			var g groupSettingFlags
			g.register(fs)
			return func(ctx context.Context, s *session, a []string) error {
				p, err := g.patch(fs)
				if err != nil {
					return err
				}
				if g.endpoint == "" {
					return usagef("herald group create needs --endpoint")
				}
				p["name"] = a[0]
				if _, ok := p["subscriptions"]; !ok {
					p["subscriptions"] = []client.Subscription{}
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				out, err := s.c.CreateGroupRaw(ctx, p)
				if err != nil {
					return err
				}
				rows := groupRows(*out)
				rows[0] = append(rows[0], out.SigningSecret)
				return s.print(out, append(groupHead, "SIGNING-SECRET"), rows)
			}
		}},
	{name: "group list", args: "", nargs: 0, summary: "List every consumer group.",
		example: "  herald group list\n  herald group list --output json | jq -r '.[] | select(.status != \"running\") | .name'",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, _ []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				gs, err := listAll(ctx, s.c.ListGroups)
				if err != nil {
					return err
				}
				return s.print(nonNil(gs), groupHead, groupRows(gs...))
			}
		}},
	groupCommand("group get", "Show a consumer group's settings and status.", "  herald group get billing --output json", (*client.Client).GetGroup),
	{name: "group patch", args: "<group>", nargs: 1, summary: "Change the settings given as flags; the others stay (a JSON merge patch).",
		example: "  herald group patch billing --rate-limit 50 --max-in-flight 4\n  herald group patch billing --subscribe orders --subscribe refunds:created",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			var g groupSettingFlags
			g.register(fs)
			return func(ctx context.Context, s *session, a []string) error {
				p, err := g.patch(fs)
				if err != nil {
					return err
				}
				if len(p) == 0 {
					return usagef("herald group patch needs at least one setting flag")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				out, err := s.c.PatchGroup(ctx, a[0], p)
				if err != nil {
					return err
				}
				return s.print(out, groupHead, groupRows(*out))
			}
		}},
	groupCommand("group pause", "Stop deliveries to a group; its backlog is kept.", "  herald group pause billing", (*client.Client).PauseGroup),
	groupCommand("group resume", "Restart deliveries to a paused or disabled group.", "  herald group resume billing", (*client.Client).ResumeGroup),
	{name: "group reset", args: "<group>", nargs: 1,
		summary: "Move a group's cursors (--to earliest, latest or timestamp with --timestamp); fenced: no POST of a\n" +
			"message below the new offset starts once this answers. Retries are not touched.",
		example: "  herald group reset billing --to latest\n  herald group reset billing --to timestamp --timestamp 2026-01-02T15:04:05Z --queues 12,13",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			to := fs.String("to", "", "earliest, latest or timestamp (required)")
			ts := fs.String("timestamp", "", "RFC 3339 time, with --to timestamp")
			queues := fs.String("queues", "", "comma-separated queue ids (default: every queue)")
			return func(ctx context.Context, s *session, a []string) error {
				if *to == "" {
					return usagef("herald group reset needs --to earliest|latest|timestamp")
				}
				qs, err := parseIDs("queues", *queues)
				if err != nil {
					return err
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				cs, err := s.c.ResetOffsets(ctx, a[0], client.OffsetReset{To: *to, Timestamp: *ts, Queues: qs})
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(cs))
				for _, c := range cs {
					rows = append(rows, []string{c.Topic, itoa(c.Queue), itoa(c.Offset), itoa(c.MaxOffset), itoa(c.Lag)})
				}
				return s.print(nonNil(cs), []string{"TOPIC", "QUEUE", "OFFSET", "MAX-OFFSET", "LAG"}, rows)
			}
		}},
	{name: "group delete", args: "<group>", nargs: 1, summary: "Delete a consumer group with its cursors, retries and dead letters.",
		example: "  herald group delete billing",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				if err := s.c.DeleteGroup(ctx, a[0]); err != nil {
					return err
				}
				return s.done("group " + a[0] + " deleted")
			}
		}},
	{name: "group stats", args: "<group>", nargs: 1, summary: "Show a group's lag, effective rate, breaker, retries and dead letters.",
		example: "  herald group stats billing\n  herald group stats billing --output json | jq .lag_messages",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				st, err := s.c.GroupStats(ctx, a[0])
				if err != nil {
					return err
				}
				return s.print(st, []string{"GROUP", "STATUS", "LAG", "LAG-S", "RATE", "EFFECTIVE", "BREAKER", "RETRIES", "DEAD-LETTERS"},
					[][]string{{st.Group, st.Status, itoa(st.LagMessages), strconv.FormatFloat(st.LagSeconds, 'f', 1, 64), itoa(st.RateLimit),
						strconv.FormatFloat(st.EffectiveRate, 'f', 1, 64), st.Breaker, itoa(st.RetryMessages), itoa(st.DeadLetters)}})
			}
		}},
}
