package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/client"
)

// subscriptionText spells a group's subscriptions as topic[:tags][ filter "…"].
func subscriptionText(subs []client.Subscription) string {
	var out []string
	for _, s := range subs {
		t := s.Topic
		if len(s.Tags) > 0 {
			t += ":" + strings.Join(s.Tags, ",")
		}
		if s.Filter != "" {
			t += fmt.Sprintf(" filter %q", s.Filter)
		}
		out = append(out, t)
	}
	return orDash(strings.Join(out, "; "))
}

// groupSettingRows is every setting and state of a group, one row each, for
// `group get`: what GET /api/v1/groups/{g} answers, in the CLI's flag names.
func groupSettingRows(g *client.Group) [][]string {
	opt := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	schedule := "default"
	if len(g.RetrySchedule) > 0 {
		var secs []string
		for _, s := range g.RetrySchedule {
			secs = append(secs, strconv.Itoa(s)+"s")
		}
		schedule = strings.Join(secs, ",")
	}
	var headers []string
	for _, k := range sortedKeys(g.EndpointHeaders) {
		headers = append(headers, k+"="+g.EndpointHeaders[k])
	}
	basic, push := "off", "off"
	if g.BasicAuth != nil {
		basic = g.BasicAuth.Username + ":" + g.BasicAuth.Password
	}
	if g.PushAuth != nil {
		push = "on, audience " + orDash(g.PushAuth.Audience)
	}
	ordering := "unordered"
	if g.Ordered {
		ordering = "by " + g.Ordering + ", on exhausted attempts: " + g.OrderedOnExhausted
	}
	rows := [][]string{
		{"name", g.Name},
		{"status", g.Status + reasonText(g.PausedReason)},
		{"endpoint", g.EndpointURL},
		{"subscriptions", subscriptionText(g.Subscriptions)},
		{"batch-size", itoa(g.BatchSize)},
		{"batch-max-bytes", itoa(g.BatchMaxBytes)},
		{"batch-window-ms", itoa(g.BatchWindowMS)},
		{"max-in-flight", itoa(g.MaxInFlight)},
		{"rate-limit", rateText(g.RateLimit)},
		{"timeout-ms", itoa(g.TimeoutMS)},
		{"max-attempts", itoa(g.MaxAttempts)},
		{"retry-schedule", schedule},
		{"max-throttles", itoa(g.MaxThrottles)},
		{"ordering", ordering},
		{"consume-from", orDash(g.ConsumeFrom)},
		{"dead-letter-retention-hours", itoa(g.DeadLetterRetentionHours)},
		{"headers", orDash(strings.Join(headers, " "))},
		{"basic-auth", basic},
		{"push-auth", push},
		{"previous-secret-expires", opt(g.PreviousSecretExpiresAt)},
		{"config-version", itoa(g.ConfigVersion)},
		{"created", g.CreatedAt},
		{"updated", g.UpdatedAt},
	}
	if g.Unreadable != "" {
		rows = append(rows, []string{"unreadable", g.Unreadable})
	}
	if g.SigningSecret != "" {
		rows = append(rows, []string{"signing-secret", g.SigningSecret})
	}
	return rows
}

func reasonText(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

func rateText(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return itoa(n) + "/s"
}

// printGroup prints one group: every setting as SETTING VALUE rows, or JSON.
func printGroup(s *session, g *client.Group) error {
	return s.print(g, []string{"SETTING", "VALUE"}, groupSettingRows(g))
}

// groupListHead and groupListRows are `group list`: each group's state and lag.
var groupListHead = []string{"NAME", "STATUS", "LAG", "LAG-S", "RETRIES", "DEAD-LETTERS", "BREAKER", "ENDPOINT", "SUBSCRIPTIONS", "RATE"}

// groupLagRows fetches each group's stats (8 at a time) and returns the rows of
// `group list`.
func groupLagRows(ctx context.Context, s *session, gs []client.Group) ([][]string, error) {
	stats := make([]*client.GroupStats, len(gs))
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(8)
	for i, g := range gs {
		eg.Go(func() error {
			st, err := s.c.GroupStats(ctx, g.Name)
			if err != nil {
				return fmt.Errorf("stats of group %s: %w", g.Name, err)
			}
			stats[i] = st
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	rows := make([][]string, 0, len(gs))
	for i, g := range gs {
		st := stats[i]
		rows = append(rows, []string{g.Name, g.Status, itoa(st.LagMessages), strconv.FormatFloat(st.LagSeconds, 'f', 1, 64),
			itoa(st.RetryMessages), itoa(st.DeadLetters), orDash(st.Breaker), g.EndpointURL, subscriptionText(g.Subscriptions), rateText(g.RateLimit)})
	}
	return rows, nil
}
