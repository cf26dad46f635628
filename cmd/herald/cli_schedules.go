package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/client"
)

var scheduleHead = []string{"NAME", "TOPIC", "CRON", "TIMEZONE", "STATE", "NEXT-RUN", "LAST-RUN", "RUNS"}

func scheduleRows(ss ...client.Schedule) [][]string {
	rows := make([][]string, 0, len(ss))
	for _, sc := range ss {
		next := ""
		if len(sc.NextRuns) > 0 {
			next = sc.NextRuns[0]
		}
		rows = append(rows, []string{sc.Name, sc.Topic, sc.Cron, sc.Timezone, sc.State, orDash(next), orDash(sc.LastRunAt), itoa(sc.Runs)})
	}
	return rows
}

// scheduleAction is a command that acts on one schedule by name and shows it.
func scheduleAction(name, summary, example string, act func(*client.Client, context.Context, string) (*client.Schedule, error)) cliCommand {
	return cliCommand{name: name, args: "<name>", nargs: 1, summary: summary, example: example,
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				sc, err := act(s.c, ctx, a[0])
				if err != nil {
					return err
				}
				return s.print(sc, scheduleHead, scheduleRows(*sc))
			}
		}}
}

var scheduleCommands = []cliCommand{
	{name: "schedule create", args: "<name>", nargs: 1,
		summary: "Create a schedule that publishes --data to --topic on every tick of --cron, in --timezone. Each tick is\n" +
			"published once, whatever the number of Herald processes; ticks missed while Herald was down are published\n" +
			"once, together, on its return. A body that is valid JSON goes as JSON unless --content-type says otherwise.",
		example: "  herald schedule create daily-digest --topic mail --cron '0 9 * * 1-5' --timezone Europe/Paris --data '{\"job\":\"digest\"}'\n" +
			"  herald schedule create heartbeat --topic ops --cron '@every 30s' --data '{}' --key heartbeat",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			topic := fs.String("topic", "", "the topic each tick publishes to (required)")
			cron := fs.String("cron", "", "cron expression: minute hour day month weekday, an optional leading seconds field,\n"+
				"or @hourly, @daily, @weekly, @monthly, @yearly, @every <duration> (required)")
			tz := fs.String("timezone", "", "IANA time zone the expression is read in (default UTC)")
			data := fs.String("data", "", "the message body (required; - reads it from standard input)")
			ct := fs.String("content-type", "", "the body's content type (default: application/json for a JSON body, else text/plain)")
			mkey := fs.String("key", "", "message key: one key, one queue, delivered in publish order")
			tag := fs.String("tag", "", "tag that subscriptions filter on")
			headers := headersFlag{}
			fs.Var(headers, "header", "x-name=value: an x-* header passed to receivers (repeatable)")
			paused := fs.Bool("paused", false, "create it paused ('herald schedule resume' starts it)")
			return func(ctx context.Context, s *session, a []string) error {
				if *topic == "" || *cron == "" || !setFlags(fs)["data"] {
					return usagef("herald schedule create needs --topic, --cron and --data")
				}
				body, err := readBody(*data)
				if err != nil {
					return err
				}
				m := client.Message{Body: body, ContentType: *ct, Key: *mkey, Tag: *tag}
				if m.ContentType == "" && !json.Valid(body) {
					m.ContentType = "text/plain; charset=utf-8"
				}
				if len(headers) > 0 {
					m.Headers = headers
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				sc, err := s.c.CreateSchedule(ctx, client.ScheduleSpec{Name: a[0], Topic: *topic, Cron: *cron, Timezone: *tz, Message: m, Paused: *paused})
				if err != nil {
					return err
				}
				return s.print(sc, scheduleHead, scheduleRows(*sc))
			}
		}},
	{name: "schedule list", args: "", nargs: 0, summary: "List every schedule with its next and last run.",
		example: "  herald schedule list\n  herald schedule list --output json | jq -r '.[].name'",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, _ []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				ss, err := listAll(ctx, s.c.ListSchedules)
				if err != nil {
					return err
				}
				return s.print(nonNil(ss), scheduleHead, scheduleRows(ss...))
			}
		}},
	{name: "schedule get", args: "<name>", nargs: 1, summary: "Show a schedule, its message and its next five run times.",
		example: "  herald schedule get daily-digest --output json",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				sc, err := s.c.GetSchedule(ctx, a[0])
				if err != nil {
					return err
				}
				if s.json {
					return s.print(sc, nil, nil)
				}
				if err := s.print(sc, scheduleHead, scheduleRows(*sc)); err != nil {
					return err
				}
				body := string(sc.Body)
				if body == "" {
					body = "(base64) " + sc.BodyBase64
				}
				fmt.Fprintf(s.out, "\nmessage: tag %s, key %s, %s\n%s\nnext runs: %s\n", orDash(sc.Tag), orDash(sc.Key), sc.ContentType, body,
					orDash(strings.Join(sc.NextRuns, ", ")))
				return nil
			}
		}},
	{name: "schedule patch", args: "<name>", nargs: 1,
		summary: "Change a schedule's --topic, --cron, --timezone or message (--data, --content-type, --key, --tag, --header;\n" +
			"the flags not given keep their value, but --header replaces every header). A new --cron or --timezone\n" +
			"starts from its first tick after now. Operators and admins.",
		example: "  herald schedule patch daily-digest --cron '0 8 * * 1-5'\n  herald schedule patch daily-digest --data '{\"job\":\"digest\",\"v\":2}'",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			topic := fs.String("topic", "", "the topic each tick publishes to")
			cron := fs.String("cron", "", "cron expression (see 'herald schedule create --help')")
			tz := fs.String("timezone", "", "IANA time zone the expression is read in")
			data := fs.String("data", "", "the message body (- reads it from standard input)")
			ct := fs.String("content-type", "", "the body's content type")
			mkey := fs.String("key", "", "message key")
			tag := fs.String("tag", "", "tag that subscriptions filter on")
			headers := headersFlag{}
			fs.Var(headers, "header", "x-name=value: an x-* header passed to receivers (repeatable; replaces them all)")
			return func(ctx context.Context, s *session, a []string) error {
				set := setFlags(fs)
				var p client.SchedulePatch
				if set["topic"] {
					p.Topic = topic
				}
				if set["cron"] {
					p.Cron = cron
				}
				if set["timezone"] {
					p.Timezone = tz
				}
				message := set["data"] || set["content-type"] || set["key"] || set["tag"] || set["header"]
				if p == (client.SchedulePatch{}) && !message {
					return usagef("herald schedule patch needs --topic, --cron, --timezone or a message flag")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				if message {
					cur, err := s.c.GetSchedule(ctx, a[0])
					if err != nil {
						return err
					}
					m, err := scheduleMessage(cur)
					if err != nil {
						return err
					}
					if set["data"] {
						if m.Body, err = readBody(*data); err != nil {
							return err
						}
						m.ContentType = ""
						if !json.Valid(m.Body) {
							m.ContentType = "text/plain; charset=utf-8"
						}
					}
					if set["content-type"] {
						m.ContentType = *ct
					}
					if set["key"] {
						m.Key = *mkey
					}
					if set["tag"] {
						m.Tag = *tag
					}
					if set["header"] {
						m.Headers = headers
					}
					p.Message = &m
				}
				sc, err := s.c.UpdateSchedule(ctx, a[0], p)
				if err != nil {
					return err
				}
				return s.print(sc, scheduleHead, scheduleRows(*sc))
			}
		}},
	scheduleAction("schedule pause", "Pause a schedule: ticks that fall while it is paused are skipped. Operators and admins.",
		"  herald schedule pause daily-digest", (*client.Client).PauseSchedule),
	scheduleAction("schedule resume", "Resume a paused schedule from its first tick after now. Operators and admins.",
		"  herald schedule resume daily-digest", (*client.Client).ResumeSchedule),
	{name: "schedule delete", args: "<name>", nargs: 1,
		summary: "Delete a schedule; a tick it already published is still delivered. Operators and admins.",
		example: "  herald schedule delete daily-digest",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				if err := s.c.DeleteSchedule(ctx, a[0]); err != nil {
					return err
				}
				fmt.Fprintf(s.out, "deleted schedule %s\n", a[0])
				return nil
			}
		}},
}

// scheduleMessage is the message schedule sc publishes, as the client sends one
// (the headers Herald adds at each tick are not part of it).
func scheduleMessage(sc *client.Schedule) (client.Message, error) {
	m := client.Message{Body: sc.Body, ContentType: sc.ContentType, Key: sc.Key, Tag: sc.Tag, Headers: sc.Headers}
	if sc.BodyBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(sc.BodyBase64)
		if err != nil {
			return m, fmt.Errorf("schedule %s: its body_base64: %w", sc.Name, err)
		}
		m.Body = b
	}
	return m, nil
}
