package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/client"
)

var keyHead = []string{"ID", "NAME", "PREFIX", "TOPICS", "CREATED", "LAST-USED", "REVOKED"}

func keyRows(ks ...client.APIKey) [][]string {
	rows := make([][]string, 0, len(ks))
	for _, k := range ks {
		used, revoked := "-", "-"
		if k.LastUsedAt != nil {
			used = *k.LastUsedAt
		}
		if k.RevokedAt != nil {
			revoked = *k.RevokedAt
		}
		rows = append(rows, []string{itoa(k.ID), k.Name, k.Prefix, strings.Join(k.Topics, ","), k.CreatedAt, used, revoked})
	}
	return rows
}

var keyCommands = []cliCommand{
	{name: "key create", args: "", nargs: 0, summary: "Create a publisher API key; the key (hk_…) is shown once.",
		example: "  herald key create --name ci --topics 'orders,orders.*'\n  KEY=$(herald key create --name ci --topics orders --output json | jq -r .key)",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			name := fs.String("name", "", "a label for the key (required)")
			topics := fs.String("topics", "", "comma-separated topic names or patterns (* matches any run of characters)")
			return func(ctx context.Context, s *session, _ []string) error {
				if *name == "" {
					return usagef("herald key create needs --name")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				k, err := s.c.CreateAPIKey(ctx, *name, nonNil(splitList(*topics)))
				if err != nil {
					return err
				}
				return s.print(k, []string{"ID", "NAME", "KEY"}, [][]string{{itoa(k.ID), k.Name, k.Key}})
			}
		}},
	{name: "key list", args: "", nargs: 0, summary: "List API keys (never their secret part).",
		example: "  herald key list",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, _ []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				ks, err := listAll(ctx, s.c.ListAPIKeys)
				if err != nil {
					return err
				}
				return s.print(nonNil(ks), keyHead, keyRows(ks...))
			}
		}},
	{name: "key revoke", args: "<key>", nargs: 1,
		summary: "Revoke an API key; every api refuses it within 5 s. <key> is its id, or its name when one key not yet\n" +
			"revoked has that name.",
		example: "  herald key revoke 3\n  herald key revoke ci",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				id, err := resolveKey(ctx, s, a[0])
				if err != nil {
					return err
				}
				k, err := s.c.RevokeAPIKey(ctx, id)
				if err != nil {
					return err
				}
				return s.print(k, keyHead, keyRows(*k))
			}
		}},
}

// resolveKey returns the id of the API key arg names: a number is its id, anything
// else the name of exactly one key not yet revoked. An unknown name matches
// client.ErrNotFound (exit 3); a name several live keys share is a usage error.
func resolveKey(ctx context.Context, s *session, arg string) (int64, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil {
		return id, nil
	}
	ks, err := listAll(ctx, s.c.ListAPIKeys)
	if err != nil {
		return 0, err
	}
	var ids []string
	var id int64
	for _, k := range ks {
		if k.Name == arg && k.RevokedAt == nil {
			id = k.ID
			ids = append(ids, itoa(k.ID))
		}
	}
	switch len(ids) {
	case 0:
		return 0, fmt.Errorf("no API key named %q that is not revoked (see 'herald key list'): %w", arg, client.ErrNotFound)
	case 1:
		return id, nil
	}
	return 0, usagef("%d API keys are named %q (ids %s): give the id", len(ids), arg, strings.Join(ids, ", "))
}
