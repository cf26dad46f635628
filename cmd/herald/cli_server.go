package main

import (
	"context"
	"flag"
	"strings"
)

var pushKeyCommands = []cliCommand{
	{name: "push-key list", args: "", nargs: 0,
		summary: "List the public keys push tokens are verified with (the api's /.well-known/jwks.json; no login needed).",
		example: "  herald push-key list",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, _ []string) error {
				ks, err := s.c.PushKeys(ctx)
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(ks))
				for _, k := range ks {
					rows = append(rows, []string{k.Kid, k.Kty + "/" + k.Crv, orDash(k.Alg), k.X})
				}
				return s.print(nonNil(ks), []string{"KID", "TYPE", "ALG", "PUBLIC-KEY"}, rows)
			}
		}},
	{name: "push-key rotate", args: "", nargs: 0,
		summary: "Make a new push-token signing key (role admin). The old one stops signing within 5 s and stays\n" +
			"published until the tokens it signed expire.",
		example: "  herald push-key rotate",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, _ []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				r, err := s.c.RotatePushKey(ctx)
				if err != nil {
					return err
				}
				return s.print(r, []string{"KID", "PUBLISHED"}, [][]string{{r.KeyID, strings.Join(r.Published, ",")}})
			}
		}},
}

var serverCommands = []cliCommand{
	{name: "server health", args: "", nargs: 0, summary: "Check that the api process answers (GET /healthz; no login needed).",
		example: "  herald server health --url http://herald-1:8080",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, _ []string) error {
				if err := s.c.Health(ctx); err != nil {
					return err
				}
				return s.report(map[string]string{"status": "ok"}, "ok")
			}
		}},
	{name: "server ready", args: "", nargs: 0,
		summary: "Check that the api can serve: MySQL and Redis answer, and each db node's health (GET /readyz;\n" +
			"no login needed). Not ready exits 7.",
		example: "  herald server ready",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, _ []string) error {
				r, err := s.c.Ready(ctx)
				if err != nil {
					return err
				}
				rows := [][]string{{"api", r.Status}}
				for _, id := range sortedKeys(r.Nodes) {
					rows = append(rows, []string{"node " + id, r.Nodes[id]})
				}
				return s.print(r, []string{"PART", "STATE"}, rows)
			}
		}},
	{name: "server openapi", args: "", nargs: 0, summary: "Print the api's OpenAPI document (YAML; no login needed).",
		example: "  herald server openapi > herald-openapi.yaml",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, _ []string) error {
				b, err := s.c.OpenAPI(ctx)
				if err != nil {
					return err
				}
				_, err = s.out.Write(b)
				return err
			}
		}},
}
