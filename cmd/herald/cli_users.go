package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/heraldhq/herald/client"
)

var userHead = []string{"ID", "USERNAME", "ROLE", "CREATED"}

func userRows(us ...client.User) [][]string {
	rows := make([][]string, 0, len(us))
	for _, u := range us {
		rows = append(rows, []string{itoa(u.ID), u.Username, u.Role, u.CreatedAt})
	}
	return rows
}

// resolveUser returns the id of the user arg names: a number is its id, anything
// else its username. An unknown username matches client.ErrNotFound (exit 3).
func resolveUser(ctx context.Context, s *session, arg string) (int64, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil && id > 0 {
		return id, nil
	}
	us, err := listAll(ctx, s.c.ListUsers)
	if err != nil {
		return 0, err
	}
	for _, u := range us {
		if u.Username == arg {
			return u.ID, nil
		}
	}
	return 0, fmt.Errorf("no user named %q (see 'herald users list'): %w", arg, client.ErrNotFound)
}

// readPassword returns the password from HERALD_NEW_PASSWORD or the first line of
// standard input, so it stays out of the process list and shell history.
func readPassword() (string, error) {
	if pw := os.Getenv("HERALD_NEW_PASSWORD"); pw != "" {
		return pw, nil
	}
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		fmt.Fprint(os.Stderr, "New password (shown as typed; prefer HERALD_NEW_PASSWORD or a pipe): ")
	}
	line, err := readLine()
	if err != nil || line == "" {
		return "", usagef("give the new password in HERALD_NEW_PASSWORD or on standard input")
	}
	return line, nil
}

// userIDCommand is a users command on one user that answers no body.
func userIDCommand(verb, summary string, call func(*client.Client, context.Context, int64) error, done string) cliCommand {
	return cliCommand{name: "users " + verb, args: "<user>", nargs: 1, summary: summary + "\n<user> is the id or username.",
		example: "  herald users " + verb + " vera",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, a []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				id, err := resolveUser(ctx, s, a[0])
				if err != nil {
					return err
				}
				if err := call(s.c, ctx, id); err != nil {
					return err
				}
				return s.report(map[string]any{"id": id, "user": a[0]}, "user "+a[0]+" "+done)
			}
		}}
}

var userCommands = []cliCommand{
	{name: "users list", args: "", nargs: 0, summary: "List the console and admin-API users (role admin).",
		example: "  herald users list",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			return func(ctx context.Context, s *session, _ []string) error {
				if err := s.auth(ctx); err != nil {
					return err
				}
				us, err := listAll(ctx, s.c.ListUsers)
				if err != nil {
					return err
				}
				return s.print(nonNil(us), userHead, userRows(us...))
			}
		}},
	{name: "users create", args: "<username>", nargs: 1,
		summary: "Create a user over HTTP (role admin); the password (8 to 72 bytes) is read from HERALD_NEW_PASSWORD or\n" +
			"the first line of standard input. 'herald user create' makes the first admin directly in the database.",
		example: "  herald users create vera --role viewer < password.txt",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			role := fs.String("role", "viewer", "admin, operator or viewer")
			return func(ctx context.Context, s *session, a []string) error {
				pw, err := readPassword()
				if err != nil {
					return err
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				u, err := s.c.CreateUser(ctx, client.UserSpec{Username: a[0], Password: pw, Role: *role})
				if err != nil {
					return err
				}
				return s.print(u, userHead, userRows(*u))
			}
		}},
	{name: "users patch", args: "<user>", nargs: 1,
		summary: "Change a user's --role and/or password (--password reads it as 'users create' does); either change\n" +
			"revokes the user's tokens. <user> is the id or username.",
		example: "  herald users patch vera --role operator\n  herald users patch vera --password < new-password.txt",
		setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
			role := fs.String("role", "", "admin, operator or viewer")
			pw := fs.Bool("password", false, "set a new password, from HERALD_NEW_PASSWORD or standard input")
			return func(ctx context.Context, s *session, a []string) error {
				var p client.UserPatch
				if setFlags(fs)["role"] {
					p.Role = role
				}
				if *pw {
					v, err := readPassword()
					if err != nil {
						return err
					}
					p.Password = &v
				}
				if p.Role == nil && p.Password == nil {
					return usagef("herald users patch needs --role or --password")
				}
				if err := s.auth(ctx); err != nil {
					return err
				}
				id, err := resolveUser(ctx, s, a[0])
				if err != nil {
					return err
				}
				u, err := s.c.PatchUser(ctx, id, p)
				if err != nil {
					return err
				}
				return s.print(u, userHead, userRows(*u))
			}
		}},
	userIDCommand("delete", "Delete a user; its tokens stop working (the last admin cannot go).", (*client.Client).DeleteUser, "deleted"),
	userIDCommand("revoke-tokens", "Revoke every token issued to a user so far; it logs in again.", (*client.Client).RevokeUserTokens,
		"must log in again"),
}
