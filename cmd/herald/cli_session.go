package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heraldhq/herald/client"
)

// errNotLoggedIn: no HERALD_TOKEN and no stored token; exits with exitUnauthorized.
var errNotLoggedIn = errors.New("not logged in: run 'herald login' or set HERALD_TOKEN")

// sessionOpts are the flags every HTTP command takes.
type sessionOpts struct {
	url    *string
	output *string
	json   *bool
}

func sessionFlags(fs *flag.FlagSet) *sessionOpts {
	return &sessionOpts{
		url:    fs.String("url", envOr("HERALD_URL", client.DefaultURL), "Herald api base URL (HERALD_URL)"),
		output: fs.String("output", "table", "output format: table or json"),
		json:   fs.Bool("json", false, "the same as --output json"),
	}
}

// session is one CLI command's connection to the api and its output format.
// noLogin, when set by auth, says why the requests go without a token; an answer
// of 401 is then reported with it.
type session struct {
	url     string
	c       *client.Client
	out     io.Writer
	json    bool
	authed  bool
	noLogin error
}

func (o *sessionOpts) open(stdout io.Writer) (*session, error) {
	switch *o.output {
	case "table", "json":
	default:
		return nil, usagef("--output must be table or json, not %q", *o.output)
	}
	u := strings.TrimRight(*o.url, "/")
	return &session{url: u, c: client.New(u), out: stdout, json: *o.output == "json" || *o.json}, nil
}

// storedToken is the token file: a JWT for one api URL and when it expires.
type storedToken struct {
	URL       string    `json:"url"`
	Username  string    `json:"username"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// tokenPath is os.UserConfigDir()/herald/token.
func tokenPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find config directory: %w", err)
	}
	return filepath.Join(dir, "herald", "token"), nil
}

func saveToken(t storedToken) error {
	p, err := tokenPath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("create config directory: %w", err)
	}
	b, _ := json.MarshalIndent(t, "", "  ")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write token: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("write token: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("write token: %w", err)
	}
	return nil
}

func loadToken() (storedToken, error) {
	var t storedToken
	p, err := tokenPath()
	if err != nil {
		return t, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return t, errNotLoggedIn
	} else if err != nil {
		return t, fmt.Errorf("read token: %w", err)
	}
	if err := json.Unmarshal(b, &t); err != nil || t.Token == "" {
		return t, fmt.Errorf("%w (the token file %s is unreadable)", errNotLoggedIn, p)
	}
	return t, nil
}

// refreshAfter is how much of a token's life (1 h) may be left before the CLI
// trades it for a new one: half of it.
const refreshAfter = 30 * time.Minute

// auth gives the client a token: HERALD_TOKEN if set (used as is), else the
// stored one, refreshed first when less than half its life is left. Without a
// usable token (none stored, one for another api URL, one expired) the requests
// go without one and s.noLogin says why: Herald then answers 401 (exit 5, with
// that reason), while an api that cannot be reached stays exit 7. A token file
// that cannot be read is an error.
func (s *session) auth(ctx context.Context) error {
	if s.authed {
		return nil
	}
	s.authed = true
	if tok := os.Getenv("HERALD_TOKEN"); tok != "" {
		s.c.SetToken(tok)
		return nil
	}
	t, err := loadToken()
	switch {
	case errors.Is(err, errNotLoggedIn):
		s.noLogin = err
		return nil
	case err != nil:
		return err
	case t.URL != "" && t.URL != s.url:
		s.noLogin = fmt.Errorf("%w: the stored token is for %s, not %s", errNotLoggedIn, t.URL, s.url)
		return nil
	case time.Now().After(t.ExpiresAt):
		s.noLogin = fmt.Errorf("%w: the stored token expired at %s", errNotLoggedIn, t.ExpiresAt.Local().Format(time.DateTime))
		return nil
	}
	s.c.SetToken(t.Token)
	if time.Until(t.ExpiresAt) < refreshAfter {
		nt, err := s.c.Refresh(ctx)
		if err != nil {
			return fmt.Errorf("refresh token: %w", err)
		}
		t.Token, t.ExpiresAt = nt.Token, nt.ExpiresAt
		if err := saveToken(t); err != nil {
			return err
		}
	}
	return nil
}

// explain adds to a 401 the reason the request went without a token.
func (s *session) explain(err error) error {
	if s.noLogin != nil && errors.Is(err, client.ErrUnauthorized) {
		return fmt.Errorf("%w (%w)", s.noLogin, err)
	}
	return err
}

var loginCommand = cliCommand{
	name: "login", args: "", nargs: 0,
	summary: "Log in to the api and keep the token in the user's config directory (herald/token, mode 0600).\n" +
		"The password is read from HERALD_PASSWORD or the first line of standard input. Commands refresh the\n" +
		"token (1 h) when less than half of its life is left; HERALD_TOKEN, when set, is used instead.",
	example: "  herald login --username admin < password.txt\n  HERALD_PASSWORD=… herald login --url https://herald.example.com --username ops",
	setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
		user := fs.String("username", envOr("HERALD_USERNAME", "admin"), "username (HERALD_USERNAME)")
		return func(ctx context.Context, s *session, _ []string) error {
			pw := os.Getenv("HERALD_PASSWORD")
			if pw == "" {
				if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
					fmt.Fprint(os.Stderr, "Password (shown as typed; prefer HERALD_PASSWORD or a pipe): ")
				}
				line, err := bufio.NewReader(os.Stdin).ReadString('\n')
				if err != nil && line == "" {
					return usagef("give the password in HERALD_PASSWORD or on standard input")
				}
				pw = strings.TrimRight(line, "\r\n")
			}
			t, err := s.c.Login(ctx, *user, pw)
			if err != nil {
				return err
			}
			if err := saveToken(storedToken{URL: s.url, Username: *user, Token: t.Token, ExpiresAt: t.ExpiresAt}); err != nil {
				return err
			}
			p, _ := tokenPath()
			return s.print(map[string]any{"username": *user, "url": s.url, "expires_at": t.ExpiresAt, "token_file": p},
				[]string{"USERNAME", "URL", "EXPIRES"}, [][]string{{*user, s.url, t.ExpiresAt.Local().Format(time.DateTime)}})
		}
	},
}

var refreshCommand = cliCommand{
	name: "refresh", args: "", nargs: 0,
	summary: "Trade the stored token (or HERALD_TOKEN) for a new one with a full lifetime (1 h) and store it.\n" +
		"Other commands do this on their own when less than half of the token's life is left.",
	example: "  herald refresh\n  herald refresh --json | jq -r .expires_at",
	setup: func(fs *flag.FlagSet) func(context.Context, *session, []string) error {
		return func(ctx context.Context, s *session, _ []string) error {
			t, err := loadToken()
			if env := os.Getenv("HERALD_TOKEN"); env != "" {
				t, err = storedToken{URL: s.url, Username: t.Username, Token: env}, nil
			}
			switch {
			case err != nil:
				return err
			case t.URL != "" && t.URL != s.url:
				return fmt.Errorf("%w: the stored token is for %s, not %s", errNotLoggedIn, t.URL, s.url)
			}
			s.c.SetToken(t.Token)
			nt, err := s.c.Refresh(ctx)
			if err != nil {
				return fmt.Errorf("refresh token: %w", err)
			}
			t.URL, t.Token, t.ExpiresAt = s.url, nt.Token, nt.ExpiresAt
			if err := saveToken(t); err != nil {
				return err
			}
			return s.print(map[string]any{"username": t.Username, "url": s.url, "expires_at": t.ExpiresAt},
				[]string{"USERNAME", "URL", "EXPIRES"}, [][]string{{orDash(t.Username), s.url, t.ExpiresAt.Local().Format(time.DateTime)}})
		}
	},
}
