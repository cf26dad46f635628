package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/heraldhq/herald/client"
)

// Exit codes of the herald CLI, for scripts. Documented in docs/cli.md ("Exit codes").
const (
	exitOK           = 0 // success
	exitError        = 1 // any other error
	exitUsage        = 2 // unknown command, wrong arguments or flags
	exitNotFound     = 3 // the topic, group, key or dead letter does not exist (404)
	exitConflict     = 4 // the name is taken or the resource is in use (409)
	exitUnauthorized = 5 // not logged in, token expired or revoked, or role too low (401, 403)
	exitInvalid      = 6 // the server refused a field (400, 413, 415, 422)
	exitUnavailable  = 7 // Herald cannot be reached or answered 503 / 429
)

// usageError is a command line the CLI cannot run; it exits with exitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// errHelpShown means --help was asked and answered: exit 0.
var errHelpShown = errors.New("help shown")

// exitCode maps an error of run to the process's exit status. Herald is
// unreachable when the connection fails (a *net.OpError: refused, no route, no
// such host) or a request times out.
func exitCode(err error) int {
	var ue *usageError
	var oe *net.OpError
	var urlErr *url.Error
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, client.ErrNotFound):
		return exitNotFound
	case errors.Is(err, client.ErrConflict):
		return exitConflict
	case errors.Is(err, client.ErrUnauthorized), errors.Is(err, client.ErrForbidden), errors.Is(err, errNotLoggedIn):
		return exitUnauthorized
	case errors.Is(err, client.ErrInvalid):
		return exitInvalid
	case errors.Is(err, client.ErrUnavailable), errors.Is(err, client.ErrRateLimited), errors.As(err, &oe),
		errors.As(err, &urlErr) && urlErr.Timeout():
		return exitUnavailable
	}
	return exitError
}

// cliCommand is one leaf of the CLI over the REST API, e.g. "topic create".
// setup registers its flags on fs and returns the function that runs it with
// the positional arguments (exactly nargs of them, or any number when nargs < 0).
type cliCommand struct {
	name    string
	args    string
	summary string
	example string
	nargs   int
	setup   func(fs *flag.FlagSet) func(ctx context.Context, s *session, args []string) error
}

// cliResources are the resources the CLI manages, each with its commands.
var cliResources = map[string][]cliCommand{}

func init() {
	cliResources["message"] = messageCommands
	cliResources["topic"] = topicCommands
	cliResources["schedule"] = scheduleCommands
	cliResources["group"] = append(groupCommands, groupActionCommands...)
	cliResources["dead-letters"] = deadLetterCommands
	cliResources["key"] = keyCommands
	cliResources["node"] = nodeCommands
	cliResources["users"] = userCommands
	cliResources["audit-log"] = auditCommands
	cliResources["push-key"] = pushKeyCommands
	cliResources["server"] = serverCommands
}

// topUsage is the answer to `herald --help`.
func topUsage() string {
	var b strings.Builder
	b.WriteString(`usage: herald <command> [arguments] [flags]

Roles (run Herald; settings from HERALD_* variables):
  all [--demo]       every role in one process (make run uses --demo)
  api                REST API and console
  dispatcher         cursors, leases, delivery jobs
  worker             POSTs to endpoints
  maintenance        dead-letter outbox, lag samples, pruning (one leader)

Database commands (direct on HERALD_MYSQL_DSN):
  migrate up|down|status
  user create --username U --password P [--role admin|operator|viewer]
  apikey create --name N --topics 'orders,orders.*'

Control plane over HTTP (--url, default HERALD_URL or http://127.0.0.1:8080; --url, --output and
--json go anywhere on the line):
  login              log in and keep a token in the user's config directory
  refresh            trade the stored token for a new one
`)
	names := make([]string, 0, len(cliResources))
	for n := range cliResources {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var subs []string
		for _, c := range cliResources[n] {
			subs = append(subs, strings.TrimPrefix(c.name, n+" "))
		}
		line := ""
		for i, sub := range subs {
			if i > 0 && len(line)+len(sub) > 76 {
				fmt.Fprintf(&b, "  %-18s %s|\n", n, line)
				n, line = "", ""
			} else if i > 0 {
				line += "|"
			}
			line += sub
		}
		fmt.Fprintf(&b, "  %-18s %s\n", n, line)
	}
	b.WriteString(`
  version            print the version

Run 'herald <command> --help' for a command's flags and examples.
Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 conflict, 5 unauthorized or forbidden,
6 invalid request, 7 Herald unavailable or rate limited.
`)
	return b.String()
}

// resourceUsage lists a resource's commands.
func resourceUsage(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: herald %s <command> [arguments] [flags]\n\ncommands:\n", name)
	for _, c := range cliResources[name] {
		fmt.Fprintf(&b, "  %-36s %s\n", strings.TrimPrefix(c.name, name+" ")+" "+c.args, c.summary)
	}
	fmt.Fprintf(&b, "\nRun 'herald %s <command> --help' for its flags and examples.\n", name)
	return b.String()
}

// runResource runs `herald <resource> <command> …`.
func runResource(ctx context.Context, stdout io.Writer, resource string, args []string) error {
	if len(args) == 0 {
		return usagef("%s", resourceUsage(resource))
	}
	if isHelp(args[0]) {
		_, _ = fmt.Fprint(stdout, resourceUsage(resource))
		return errHelpShown
	}
	for _, c := range cliResources[resource] {
		if c.name == resource+" "+args[0] {
			return runCLICommand(ctx, stdout, c, args[1:])
		}
	}
	return usagef("unknown command %q\n%s", resource+" "+args[0], resourceUsage(resource))
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" || a == "help" }

// runCLICommand parses a leaf command's flags (anywhere among its arguments) and runs it.
func runCLICommand(ctx context.Context, stdout io.Writer, c cliCommand, args []string) error {
	fs := flag.NewFlagSet("herald "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts := sessionFlags(fs)
	run := c.setup(fs)
	help := func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "usage: herald %s [flags]\n\n%s\n\nflags:\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		if c.example != "" {
			fmt.Fprintf(&b, "\nexamples:\n%s\n", c.example)
		}
		if ops := commandOperations[c.name]; len(ops) > 0 {
			fmt.Fprintf(&b, "\nREST: %s\n", strings.Join(ops, ", "))
		}
		return b.String()
	}
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = fmt.Fprint(stdout, help())
		return errHelpShown
	}
	if err != nil {
		return usagef("%v\n\n%s", err, help())
	}
	if c.nargs >= 0 && len(pos) != c.nargs {
		return usagef("herald %s takes %s\n\n%s", c.name, c.args, help())
	}
	s, err := opts.open(stdout)
	if err != nil {
		return err
	}
	return s.explain(run(ctx, s, pos))
}

// parseInterspersed parses flags placed before, between or after positional
// arguments and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// envOr returns the environment variable k, or def when it is unset or empty.
func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
