package main

import (
	"context"
	"flag"
	"fmt"
	"os"
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

// filtersFlag collects --filter topic=expression (repeatable): the attribute
// filter of that topic's --subscribe in the same command.
type filtersFlag map[string]string

func (f filtersFlag) String() string { return "" }

func (f filtersFlag) Set(v string) error {
	topic, expr, ok := strings.Cut(v, "=")
	if !ok || topic == "" {
		return fmt.Errorf(`want topic=expression, e.g. orders='attributes.x-region = "eu"'`)
	}
	if _, dup := f[topic]; dup {
		return fmt.Errorf("a second filter for topic %s: combine them with AND or OR in one", topic)
	}
	f[topic] = expr
	return nil
}

// headersFlag collects --header name=value (repeatable).
type headersFlag map[string]string

func (f headersFlag) String() string { return "" }

func (f headersFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=value")
	}
	f[name] = value
	return nil
}

// namesFlag collects a repeatable name.
type namesFlag []string

func (f *namesFlag) String() string { return "" }

func (f *namesFlag) Set(v string) error {
	if v == "" {
		return fmt.Errorf("want a header name")
	}
	*f = append(*f, v)
	return nil
}

// groupSettingFlags are the writable settings as flags, shared by create and
// patch: one flag for each setting of the API's group (api/openapi.yaml, Group).
type groupSettingFlags struct {
	endpoint                                   string
	subs                                       subscriptionsFlag
	filters                                    filtersFlag
	batchSize, batchMaxBytes, batchWindowMS    int
	maxInFlight, rateLimit, timeoutMS, retries int
	retrySchedule, consumeFrom, onExhausted    string
	ordering                                   string
	ordered                                    bool
	dlRetentionHours, maxThrottles             int
	headers                                    headersFlag
	removeHeaders                              namesFlag
	basicAuth                                  string
	pushAuth                                   bool
	pushAudience                               string
}

func (g *groupSettingFlags) register(fs *flag.FlagSet) {
	g.headers = headersFlag{}
	g.filters = filtersFlag{}
	fs.StringVar(&g.endpoint, "endpoint", "", "endpoint URL Herald POSTs to")
	fs.Var(&g.subs, "subscribe", "topic or topic:tag1,tag2 (repeat for several; replaces them all on patch)")
	fs.Var(g.filters, "filter", "topic=expression: an attribute filter on the publisher's x-* headers for that topic's\n"+
		"--subscribe in the same command (Pub/Sub filter syntax, e.g. orders='attributes.x-region = \"eu\"'; repeatable)")
	fs.IntVar(&g.batchSize, "batch-size", 0, "messages per POST, 1 to 1000 (1 = classic webhook; default 1)")
	fs.IntVar(&g.batchMaxBytes, "batch-max-bytes", 0, "body bytes per POST, 1024 to 16 MiB (default 1 MiB)")
	fs.IntVar(&g.batchWindowMS, "batch-window-ms", 0, "ms a partial batch may wait for more, 0 to 60000 (default 0)")
	fs.IntVar(&g.maxInFlight, "max-in-flight", 0, "POSTs in flight at once, 1 to 1024 (default 16)")
	fs.IntVar(&g.rateLimit, "rate-limit", 0, "messages per second (0 = unlimited, the default)")
	fs.IntVar(&g.timeoutMS, "timeout-ms", 0, "POST timeout in ms, 100 to 30000 (default 15000)")
	fs.IntVar(&g.retries, "max-attempts", 0, "attempts before a message becomes a dead letter, 1 to 100 (default 10)")
	fs.StringVar(&g.retrySchedule, "retry-schedule", "", "comma-separated seconds between attempts, e.g. 5,300,1800 ('' for the default)")
	fs.BoolVar(&g.ordered, "ordered", false, "deliver in order, one POST at a time per key or per queue (see --ordering;\n"+
		"--ordered=false to stop)")
	fs.StringVar(&g.ordering, "ordering", "", "ordered groups: key (default: one POST at a time per message key) or queue\n"+
		"(one per queue); only with --ordered")
	fs.StringVar(&g.onExhausted, "ordered-on-exhausted", "", "ordered groups, after max attempts: dead_letter (default) or pause")
	fs.StringVar(&g.consumeFrom, "consume-from", "", "where new cursors start: earliest, latest (default) or an RFC 3339 time")
	fs.IntVar(&g.dlRetentionHours, "dead-letter-retention-hours", 0, "hours dead letters are kept, 1 to 8760 (default 336)")
	fs.IntVar(&g.maxThrottles, "max-throttles", 0, "throttles in a row (429, or 503 with Retry-After) that make a message's failed\n"+
		"attempt, 1 to 1000 (default 10; unordered batches add one per halving)")
	fs.Var(g.headers, "header", "name=value: a static header added to every POST (repeat for several; on patch the\n"+
		"others stay). Values are write-only: reads show "+client.MaskedValue+", and sending that keeps the value")
	fs.Var(&g.removeHeaders, "remove-header", "name of a static header to remove (patch; repeatable)")
	fs.StringVar(&g.basicAuth, "basic-auth", "", "user:password sent as HTTP basic auth on every POST ('' removes it;\n"+
		"password "+client.MaskedValue+" keeps the stored one). Cannot be combined with push auth")
	fs.BoolVar(&g.pushAuth, "push-auth", false, "send a push JWT (Authorization: Bearer, EdDSA; JWKS at /.well-known/jwks.json)\n"+
		"with every POST; --push-auth=false turns it off")
	fs.StringVar(&g.pushAudience, "push-audience", "", "the push JWT's aud claim (implies --push-auth; default: the endpoint URL)")
}

// patch is the merge patch of the flags given on the command line.
func (g *groupSettingFlags) patch(fs *flag.FlagSet) (map[string]any, error) {
	p := map[string]any{}
	var err error
	for topic, expr := range g.filters {
		found := false
		for i := range g.subs {
			if g.subs[i].Topic == topic {
				g.subs[i].Filter, found = expr, true
			}
		}
		if !found {
			return nil, usagef("--filter %s: no --subscribe %s in this command to attach it to", topic, topic)
		}
	}
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
			if secs == nil {
				p["retry_schedule"] = nil // null: the default schedule
				return
			}
			p["retry_schedule"] = secs
		case "ordered":
			p["ordered"] = g.ordered
		case "ordering":
			p["ordering"] = g.ordering
		case "ordered-on-exhausted":
			p["ordered_on_exhausted"] = g.onExhausted
		case "consume-from":
			p["consume_from"] = g.consumeFrom
		case "dead-letter-retention-hours":
			p["dead_letter_retention_hours"] = g.dlRetentionHours
		case "max-throttles":
			p["max_throttles"] = g.maxThrottles
		case "basic-auth":
			if g.basicAuth == "" {
				p["basic_auth"] = nil
				return
			}
			user, pw, ok := strings.Cut(g.basicAuth, ":")
			if !ok {
				err = usagef("--basic-auth: want user:password ('' to remove)")
			}
			p["basic_auth"] = client.BasicAuth{Username: user, Password: pw}
		case "push-auth":
			if !g.pushAuth {
				p["push_auth"] = nil
			} else if _, ok := p["push_auth"]; !ok {
				p["push_auth"] = client.PushAuth{Audience: g.pushAudience}
			}
		case "push-audience":
			p["push_auth"] = client.PushAuth{Audience: g.pushAudience}
		}
	})
	if pa, ok := p["push_auth"]; ok && pa == nil && g.pushAudience != "" {
		err = usagef("--push-audience needs push auth on, not --push-auth=false")
	}
	if len(g.headers) > 0 || len(g.removeHeaders) > 0 {
		hs := map[string]any{}
		for k, v := range g.headers {
			hs[k] = v
		}
		for _, k := range g.removeHeaders {
			if _, ok := g.headers[k]; ok {
				err = usagef("--header %s and --remove-header %s contradict each other", k, k)
			}
			hs[k] = nil // a merge patch's null removes the member
		}
		p["endpoint_headers"] = hs
	}
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

// blockedKeyCommand is a skip or resume of a blocked key (--key, --queue) that
// prints the blocked keys it applies to.
func blockedKeyCommand(name, summary, example string,
	call func(*client.Client, context.Context, string, string, int64) ([]client.BlockedKey, error)) cliCommand {
	return cliCommand{name: name, args: "<group>", nargs: 1, summary: summary, example: example,
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			key := fs.String("key", "", "the blocked message key (required)")
			queue := fs.Int64("queue", 0, "only this queue id (default: every queue where the key is blocked)")
			return func(ctx context.Context, s *session, a []string) error {
				seen := false
				fs.Visit(func(f *flag.Flag) { seen = seen || f.Name == "key" })
				if !seen {
					return usagef("herald %s needs --key", name)
				}
				if *queue < 0 {
					return usagef("--queue: want a queue id")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				ks, err := call(s.c, ctx, a[0], *key, *queue)
				if err != nil {
					return orderingHint(ctx, s, a[0], "key", err)
				}
				rows := make([][]string, 0, len(ks))
				for _, k := range ks {
					rows = append(rows, []string{itoa(k.Queue), k.Key, k.MessageID, itoa(k.Count), itoa(k.Attempts), orDash(k.Action)})
				}
				return s.print(nonNil(ks), []string{"QUEUE", "KEY", "HEAD", "COUNT", "ATTEMPTS", "ACTION"}, rows)
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
				if len(g.removeHeaders) > 0 {
					return usagef("--remove-header is for herald group patch; a new group has no headers")
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
	{name: "group list", args: "", nargs: 0, summary: "List every consumer group with its status and lag (messages and seconds behind),\n" +
		"retries and pending dead letters; --output json lists the groups' settings.",
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
				if s.json {
					return s.print(nonNil(gs), nil, nil)
				}
				rows, err := groupLagRows(ctx, s, gs)
				if err != nil {
					return err
				}
				return s.print(nil, groupListHead, rows)
			}
		}},
	{name: "group get", args: "<group>", nargs: 1,
		summary: "Show every setting of a consumer group and its status. --show-secret adds its signing secret (operators and\n" +
			"admins; the server audits each read as group.secret.read).",
		example: "  herald group get billing --output json\n  herald group get billing --show-secret --output json | jq -r .signing_secret",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			secret := fs.Bool("show-secret", false, "include the signing secret (whsec_…); role operator or admin")
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				get := s.c.GetGroup
				if *secret {
					get = s.c.GroupSecret
				}
				g, err := get(ctx, a[0])
				if err != nil {
					return err
				}
				return printGroup(s, g)
			}
		}},
	{name: "group patch", args: "<group>", nargs: 1, summary: "Change the settings given as flags; the others stay (a JSON merge patch).\n" +
		"An --endpoint on another host drops the stored header values and basic-auth password not given again\n" +
		"(named on stderr), unless an admin passes --keep-endpoint-auth.",
		example: "  herald group patch billing --rate-limit 50 --max-in-flight 4\n  herald group patch billing --subscribe orders --subscribe refunds:created\n" +
			"  herald group patch billing --header x-api-key=$NEW_KEY --remove-header x-old\n" +
			"  herald group patch billing --basic-auth '' --push-audience https://billing.example.com\n" +
			"  herald group patch billing --endpoint https://new.example.com/hooks --header x-api-key=$KEY_FOR_NEW_HOST",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			var g groupSettingFlags
			g.register(fs)
			keep := fs.Bool("keep-endpoint-auth", false, "with an --endpoint on another host, keep the stored header values and basic-auth\n"+
				"password for it (role admin)")
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
				out, err := s.c.PatchGroupWith(ctx, a[0], p, client.PatchOptions{KeepEndpointAuth: *keep})
				if err != nil {
					return err
				}
				if len(out.DroppedEndpointAuth) > 0 {
					fmt.Fprintf(os.Stderr, "herald: the endpoint moved to another host; dropped the stored %s (give them again to send them there)\n",
						strings.Join(out.DroppedEndpointAuth, ", "))
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
	{name: "group delete", args: "<group>", nargs: 1,
		summary: "Delete a consumer group: its cursors, subscriptions, retries and <group>.dlq topic go at once, and no\n" +
			"POST starts after the answer. Its dead letters and attempt log stay in the database until purge_after\n" +
			"(7 days by default), unless --purge deletes them too. Refused (exit 4) while another group subscribes to\n" +
			"its dead-letter topic.",
		example: "  herald group delete billing\n  herald group delete billing --purge --output json",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			purge := fs.Bool("purge", false, "delete its dead letters and attempt log now, not after the grace period")
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				d, err := s.c.DeleteGroup(ctx, a[0], *purge)
				if err != nil {
					return err
				}
				line := "group " + d.Group + " deleted; its dead letters and attempt log "
				if d.Purged {
					line += "with it"
				} else {
					line += "are kept until " + d.PurgeAfter + " (--purge deletes them now)"
				}
				if d.DLQTopic != "" {
					line += "; topic " + d.DLQTopic + " deleted"
				}
				return s.report(d, line)
			}
		}},
	blockedKeyCommand("group key-skip", "Skip the messages a blocked key of a group ordered by key waits on: they become dead\n"+
		"letters and the key's later messages go on. Applied by the owning dispatcher within a heartbeat.",
		"  herald group key-skip billing --key customer-42\n  herald group key-skip billing --key customer-42 --queue 12",
		(*client.Client).SkipBlockedKey),
	blockedKeyCommand("group key-resume", "Send the messages a blocked key waits on again now, with a fresh count of attempts\n"+
		"(also after a pause on exhausted attempts). Applied by the owning dispatcher within a heartbeat.",
		"  herald group key-resume billing --key customer-42", (*client.Client).ResumeBlockedKey),
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
				return s.print(st, []string{"GROUP", "STATUS", "LAG", "LAG-S", "RATE", "EFFECTIVE", "BREAKER", "RETRIES", "DEAD-LETTERS",
					"BLOCKED-KEYS"},
					[][]string{{st.Group, st.Status, itoa(st.LagMessages), strconv.FormatFloat(st.LagSeconds, 'f', 1, 64), itoa(st.RateLimit),
						strconv.FormatFloat(st.EffectiveRate, 'f', 1, 64), st.Breaker, itoa(st.RetryMessages), itoa(st.DeadLetters),
						itoa(st.BlockedKeyCount)}})
			}
		}},
}
