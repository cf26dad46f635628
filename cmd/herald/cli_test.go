package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// heraldBin is the herald binary, built once in TestMain, that the CLI tests run.
var heraldBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herald-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	heraldBin = filepath.Join(dir, "herald")
	build := exec.Command("go", "build", "-o", heraldBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build herald:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cliEnv runs the built herald against one test Herald with its own config directory.
type cliEnv struct {
	t      *testing.T
	env    []string
	config string
}

func newCLIEnv(t *testing.T, baseURL string) *cliEnv {
	home := t.TempDir()
	e := &cliEnv{t: t, config: filepath.Join(home, "config")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HERALD_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			e.env = append(e.env, kv)
		}
	}
	e.env = append(e.env, "HOME="+home, "XDG_CONFIG_HOME="+e.config, "HERALD_URL="+baseURL)
	return e
}

// run returns the exit code, stdout and stderr of herald args (stdin optional, extra env).
func (e *cliEnv) run(stdin string, env []string, args ...string) (int, string, string) {
	e.t.Helper()
	cmd := exec.Command(heraldBin, args...)
	cmd.Env = append(append([]string{}, e.env...), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	require.NoError(e.t, err)
	return 0, out.String(), errb.String()
}

// ok runs herald and requires exit 0.
func (e *cliEnv) ok(args ...string) string {
	e.t.Helper()
	code, out, errOut := e.run("", nil, args...)
	require.Equal(e.t, 0, code, "herald %s: %s%s", strings.Join(args, " "), out, errOut)
	return out
}

// exit runs herald and requires the exit code want.
func (e *cliEnv) exit(want int, args ...string) string {
	e.t.Helper()
	code, out, errOut := e.run("", nil, args...)
	require.Equal(e.t, want, code, "herald %s: %s%s", strings.Join(args, " "), out, errOut)
	return errOut
}

func jsonOf[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	return v
}

// TestCLIControlPlane drives the built binary against a real Herald: login and
// the token file, every topic, group, dead-letter and key command, table and JSON
// output, and the exit codes scripts branch on.
func TestCLIControlPlane(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)

	e.exit(exitUnauthorized, "topic", "list")
	code, _, errOut := e.run("wrong password\n", nil, "login", "--username", heraldtest.AdminUser)
	require.Equal(t, exitUnauthorized, code, errOut)
	code, out, errOut := e.run(heraldtest.AdminPassword+"\n", nil, "login", "--username", heraldtest.AdminUser)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, heraldtest.AdminUser)
	fi, err := os.Stat(filepath.Join(e.config, "herald", "token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// Topics.
	require.Contains(t, e.ok("topic", "create", "orders", "--queues", "2"), "orders")
	require.Contains(t, e.exit(exitConflict, "topic", "create", "orders"), "409 conflict")
	e.exit(exitNotFound, "topic", "get", "nope")
	e.exit(exitInvalid, "topic", "create", "Bad Name!")
	topics := jsonOf[[]struct {
		Name   string
		Queues []struct{ ID int64 }
	}](t, e.ok("topic", "list", "--output", "json"))
	require.Len(t, topics, 1)
	require.Len(t, topics[0].Queues, 2)
	require.Regexp(t, `(?m)^NAME\s+QUEUES`, e.ok("topic", "list"))
	e.ok("topic", "patch", "orders", "--read-only", fmt.Sprint(topics[0].Queues[0].ID))
	require.Contains(t, e.ok("topic", "get", "orders"), "read_only")
	e.ok("topic", "patch", "orders", "--read-only", "", "--queues", "3")
	require.Len(t, jsonOf[struct{ Queues []any }](t, e.ok("topic", "get", "orders", "--output", "json")).Queues, 3)

	// Groups.
	recv := heraldtest.NewReceiver(t)
	g := jsonOf[struct {
		Name          string `json:"name"`
		SigningSecret string `json:"signing_secret"`
		RateLimit     int    `json:"rate_limit"`
	}](t, e.ok("group", "create", "billing", "--endpoint", recv.URL, "--subscribe", "orders:created", "--consume-from", "earliest", "--output", "json"))
	require.True(t, strings.HasPrefix(g.SigningSecret, "whsec_"))
	recv.SetSecret(g.SigningSecret)
	e.exit(exitUsage, "group", "create", "nowhere")
	patched := jsonOf[struct {
		RateLimit     int `json:"rate_limit"`
		MaxInFlight   int `json:"max_in_flight"`
		Subscriptions []struct {
			Topic string
			Tags  []string
		}
	}](t, e.ok("group", "patch", "billing", "--rate-limit", "50", "--output", "json"))
	require.Equal(t, 50, patched.RateLimit)
	require.Equal(t, []string{"created"}, patched.Subscriptions[0].Tags, "settings not given stay")
	// A stored header does not follow the endpoint to another host unless kept.
	e.ok("group", "patch", "billing", "--header", "x-api-key=k1")
	other := heraldtest.NewReceiver(t)
	code, _, errOut = e.run("", nil, "group", "patch", "billing", "--endpoint", other.URL)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "dropped the stored x-api-key")
	e.ok("group", "patch", "billing", "--header", "x-api-key=k2")
	code, _, errOut = e.run("", nil, "group", "patch", "billing", "--endpoint", recv.URL, "--keep-endpoint-auth")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, errOut, "dropped")
	require.Contains(t, e.ok("group", "get", "billing", "--output", "json"), "x-api-key")
	require.Contains(t, e.ok("group", "pause", "billing"), "paused")
	require.Contains(t, e.ok("group", "get", "billing"), "paused")
	require.Contains(t, e.ok("group", "resume", "billing"), "running")
	require.Regexp(t, `(?m)^billing\s+running`, e.ok("group", "list"))
	e.exit(exitNotFound, "group", "stats", "nope")
	require.Equal(t, "billing", jsonOf[struct{ Group string }](t, e.ok("group", "stats", "billing", "--output", "json")).Group)
	e.exit(exitUsage, "group", "reset", "billing")
	require.Len(t, jsonOf[[]any](t, e.ok("group", "reset", "billing", "--to", "latest", "--output", "json")), 3)

	// Keys, and a message delivered through them.
	k := jsonOf[struct {
		ID  int64
		Key string
	}](t, e.ok("key", "create", "--name", "ci", "--topics", "orders", "--output", "json"))
	h.Publish(k.Key, "orders", map[string]any{"body": map[string]int{"n": 1}, "tag": "created"})
	recv.WaitCount(1, 15*time.Second)
	require.Contains(t, e.ok("key", "list"), "ci")
	require.Contains(t, e.ok("key", "revoke", fmt.Sprint(k.ID)), "ci")
	e.exit(exitNotFound, "key", "revoke", "999999")
	require.Contains(t, e.exit(exitNotFound, "key", "revoke", "abc"), `no API key named "abc"`)
	k2 := jsonOf[struct{ ID int64 }](t, e.ok("key", "create", "--name", "deploy", "--topics", "orders", "--json"))
	require.Regexp(t, `(?m)^`+fmt.Sprint(k2.ID)+`\s+deploy\s`, e.ok("key", "revoke", "deploy"))
	e.ok("key", "create", "--name", "twin", "--topics", "orders")
	e.ok("key", "create", "--name", "twin", "--topics", "orders")
	require.Contains(t, e.exit(exitUsage, "key", "revoke", "twin"), "give the id")

	// Dead letters: none yet; a selection is required.
	require.Equal(t, "[]\n", e.ok("dead-letters", "list", "billing", "--output", "json"))
	e.exit(exitUsage, "dead-letters", "redrive", "billing")
	require.Equal(t, int64(0), jsonOf[map[string]int64](t, e.ok("dead-letters", "redrive", "billing", "--all", "--output", "json"))["redriven"])
	require.Equal(t, int64(0), jsonOf[map[string]int64](t, e.ok("dead-letters", "purge", "billing", "--ids", "1,2", "--output", "json"))["purged"])
	e.exit(exitNotFound, "dead-letters", "list", "nope")

	// A subscribed topic cannot be deleted; an unsubscribed one can.
	e.exit(exitConflict, "topic", "delete", "orders")
	e.ok("topic", "create", "spare")
	require.Contains(t, e.ok("topic", "delete", "spare"), "deleted")
	e.exit(exitNotFound, "topic", "delete", "spare")

	// HERALD_TOKEN wins over the stored token.
	code, _, _ = e.run("", []string{"HERALD_TOKEN=not-a-jwt"}, "topic", "list")
	require.Equal(t, exitUnauthorized, code)
	code, _, _ = e.run("", []string{"HERALD_TOKEN=" + h.Token()}, "topic", "list")
	require.Equal(t, 0, code)
	// The stored token is not sent to another api than its own: one that cannot be
	// reached is exit 7, one that answers 401 exit 5 with the reason.
	e.exit(exitUnavailable, "topic", "list", "--url", "http://127.0.0.1:1")
	require.Contains(t, e.exit(exitUnauthorized, "topic", "list", "--url", strings.Replace(h.BaseURL, "127.0.0.1", "localhost", 1)),
		"the stored token is for "+h.BaseURL)
}

// TestCLIExitCodes: every exit code of the README's table that a running Herald
// and a client can produce, each from the situation the table names.
func TestCLIExitCodes(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	down := "http://127.0.0.1:1" // nothing listens on port 1

	// Not logged in: 5 where Herald answers (401, with the reason), 7 where it cannot be reached.
	require.Contains(t, e.exit(exitUnauthorized, "topic", "list"), "not logged in")
	e.exit(exitUnavailable, "topic", "list", "--url", down)
	_, _, errOut := e.run(heraldtest.AdminPassword+"\n", nil, "login", "--username", heraldtest.AdminUser)
	require.Empty(t, errOut)
	e.ok("topic", "create", "orders")                                  // 0
	e.exit(exitUsage, "topic", "create")                               // 2
	e.exit(exitNotFound, "topic", "get", "nope")                       // 3
	e.exit(exitConflict, "topic", "create", "orders")                  // 4
	e.exit(exitInvalid, "topic", "patch", "orders", "--queues", "999") // 6
	// With a stored token: an api that cannot be reached is 7, under its own URL or another.
	path := filepath.Join(e.config, "herald", "token")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	st := jsonOf[storedToken](t, string(b))
	st.URL = down
	b, _ = json.Marshal(st)
	require.NoError(t, os.WriteFile(path, b, 0o600))
	e.exit(exitUnavailable, "topic", "list", "--url", down)
	e.exit(exitUnavailable, "group", "list", "--url", "http://127.0.0.1:2")
	// A token that cannot be read is another error: 1.
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Mkdir(path, 0o700))
	require.Contains(t, e.exit(exitError, "topic", "list"), "read token")
	// 429: the login throttle answers a sixth wrong password for one name in a row.
	code := 0
	for range 6 {
		code, _, _ = e.run("wrong password\n", nil, "login", "--username", "mallory")
	}
	require.Equal(t, exitUnavailable, code, "rate limited")
	// 5 for a token Herald refuses (401) and for a role too low (403).
	code, _, _ = e.run("", []string{"HERALD_TOKEN=not-a-jwt"}, "topic", "list")
	require.Equal(t, exitUnauthorized, code)
	h.Admin("POST", "/users", map[string]string{"username": "vera", "password": "long-enough-pw", "role": "viewer"}, 201)
	viewer := newCLIEnv(t, h.BaseURL)
	code, _, errOut = viewer.run("long-enough-pw\n", nil, "login", "--username", "vera")
	require.Equal(t, 0, code, errOut)
	viewer.ok("topic", "list")
	require.Contains(t, viewer.exit(exitUnauthorized, "topic", "create", "more"), "403")
}

// TestCLITokenRefresh: a stored token with less than half its life left is traded
// for a new one before the command runs; an expired one asks for a login.
func TestCLITokenRefresh(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	path := filepath.Join(e.config, "herald", "token")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	write := func(expires time.Time) {
		b, err := json.Marshal(storedToken{URL: h.BaseURL, Username: heraldtest.AdminUser, Token: h.Token(), ExpiresAt: expires})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, b, 0o600))
	}
	write(time.Now().Add(10 * time.Minute))
	e.ok("topic", "list")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	st := jsonOf[storedToken](t, string(b))
	require.WithinDuration(t, time.Now().Add(time.Hour), st.ExpiresAt, time.Minute, "refreshed to a full hour")
	code, out, errOut := e.run("", []string{"HERALD_TOKEN=" + st.Token}, "topic", "list")
	require.Equal(t, 0, code, out+errOut)

	write(time.Now().Add(-time.Minute))
	require.Contains(t, e.exit(exitUnauthorized, "topic", "list"), "expired")
}

// TestCLIHelpAndUsage: --help answers 0 on stdout for every level, usage mistakes
// exit 2, and a role's help lists only its own flags.
func TestCLIHelpAndUsage(t *testing.T) {
	t.Parallel()
	e := newCLIEnv(t, "http://127.0.0.1:1")
	for _, args := range [][]string{{"--help"}, {"help"}, {"topic", "--help"}, {"help", "group"}, {"group", "create", "--help"}, {"dead-letters", "purge", "-h"}, {"login", "--help"}, {"migrate", "--help"},
		{"message", "publish", "--help"}, {"--json", "users", "--help"}, {"group", "--url", "http://x", "queue-skip", "-h"}, {"refresh", "--help"}} {
		out := e.ok(args...)
		require.Contains(t, out, "usage: herald", args)
	}
	require.Contains(t, e.ok("group", "create", "--help"), "examples:")
	require.Contains(t, e.ok("group", "queue-skip", "--help"), "REST: POST /api/v1/groups/:group/queues/:queue/skip")
	require.Contains(t, e.ok("--help"), "Exit codes")
	api := e.ok("api", "--help")
	require.Contains(t, api, "-http-addr")
	require.NotContains(t, api, "-demo", "the demo flag belongs to 'all'")
	require.Contains(t, e.ok("all", "--help"), "-demo")

	e.exit(exitUsage)
	e.exit(exitUsage, "nope")
	e.exit(exitUsage, "topic")
	e.exit(exitUsage, "topic", "frobnicate")
	e.exit(exitUsage, "topic", "create")
	e.exit(exitUsage, "topic", "create", "a", "b")
	e.exit(exitUsage, "topic", "list", "--no-such-flag")
	e.exit(exitUsage, "topic", "list", "--output", "yaml")
	e.exit(exitUsage, "api", "--no-such-flag")
	code, _, _ := e.run("", []string{"HERALD_TOKEN=x"}, "topic", "list")
	require.Equal(t, exitUnavailable, code, "nothing listens on port 1")
}

// TestRoleWarnsUnknownVariables: a role logs each misspelt HERALD_* variable at
// start (here before it fails to reach a MySQL that is not there).
func TestRoleWarnsUnknownVariables(t *testing.T) {
	t.Parallel()
	e := newCLIEnv(t, "http://127.0.0.1:1")
	code, _, errOut := e.run("", []string{"HERALD_WORKER_CONCURENCY=3", "HERALD_JWT_SECRET=0123456789abcdef0123456789abcdef"},
		"api", "--mysql-dsn", "root@tcp(127.0.0.1:1)/x", "--http-addr", "127.0.0.1:0", "--metrics-addr", "")
	require.NotZero(t, code)
	require.Contains(t, errOut, `"variable":"HERALD_WORKER_CONCURENCY"`)
	require.NotContains(t, errOut, "HERALD_JWT_SECRET\"", "a known setting is not reported")
}

// TestCLIDeadLetters: a message that used up its one attempt is listed by
// `dead-letters list` and sent again by `dead-letters redrive --ids`.
func TestCLIDeadLetters(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	e := newCLIEnv(t, h.BaseURL)
	tok := []string{"HERALD_TOKEN=" + h.Token()}
	run := func(args ...string) string {
		code, out, errOut := e.run("", tok, args...)
		require.Equal(t, 0, code, "herald %s: %s%s", strings.Join(args, " "), out, errOut)
		return out
	}
	h.CreateTopic("orders", 1)
	recv := heraldtest.NewReceiver(t)
	var failing atomic.Bool
	failing.Store(true)
	recv.Respond = func(heraldtest.Delivery) int {
		if failing.Load() {
			return 500
		}
		return 204
	}
	secret := jsonOf[struct {
		SigningSecret string `json:"signing_secret"`
	}](t, run("group", "create", "billing", "--endpoint", recv.URL, "--subscribe", "orders", "--max-attempts", "1", "--output", "json")).SigningSecret
	recv.SetSecret(secret)
	ids := h.Publish(h.CreateAPIKey("orders"), "orders", map[string]any{"body": map[string]int{"n": 1}}, map[string]any{"body": map[string]int{"n": 2}})

	type deadLetter struct {
		ID        int64  `json:"id"`
		MessageID string `json:"message_id"`
		State     string `json:"state"`
		LastError string `json:"last_error"`
	}
	var dls []deadLetter
	require.Eventually(t, func() bool {
		dls = jsonOf[[]deadLetter](t, run("dead-letters", "list", "billing", "--output", "json"))
		return len(dls) == 2
	}, 15*time.Second, 50*time.Millisecond)
	require.ElementsMatch(t, []string{ids[0].ID, ids[1].ID}, []string{dls[0].MessageID, dls[1].MessageID})
	require.Contains(t, run("dead-letters", "list", "billing"), dls[0].MessageID)

	failing.Store(false)
	out := run("dead-letters", "redrive", "billing", "--ids", fmt.Sprint(dls[0].ID), "--output", "json")
	require.Equal(t, int64(1), jsonOf[map[string]int64](t, out)["redriven"])
	recv.WaitCount(1, 15*time.Second)
	out = run("dead-letters", "purge", "billing", "--ids", fmt.Sprint(dls[1].ID), "--output", "json")
	require.Equal(t, int64(1), jsonOf[map[string]int64](t, out)["purged"])
	require.Equal(t, "[]\n", run("dead-letters", "list", "billing", "--output", "json"), "no pending dead letter left")
	require.Equal(t, "[]\n", run("dead-letters", "list", "billing", "--state", "pending", "--output", "json"))

	// Every state, and each one alone.
	all := jsonOf[[]deadLetter](t, run("dead-letters", "list", "billing", "--state", "all", "--output", "json"))
	require.Len(t, all, 2)
	require.Equal(t, []string{"redriven", "purged"}, []string{all[0].State, all[1].State})
	for _, st := range []string{"redriven", "purged"} {
		one := jsonOf[[]deadLetter](t, run("dead-letters", "list", "billing", "--state", st, "--output", "json"))
		require.Len(t, one, 1, st)
		require.Equal(t, st, one[0].State)
	}
	require.Regexp(t, `(?m)^\d+\s+`+dls[1].MessageID+`\s+purged`, run("dead-letters", "list", "billing", "--state", "all"))
	e.exit(exitUsage, "dead-letters", "list", "billing", "--state", "")
	e.exit(exitUsage, "dead-letters", "list", "billing", "--state", "gone")
}
