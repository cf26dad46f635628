package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/demo"
	"github.com/heraldhq/herald/models"
)

// demoDir keeps the demo's generated secrets and API key between runs of `make run`.
const demoDir = ".herald"

var demoEnvFile = filepath.Join(demoDir, "demo.env")

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// readDemoEnv reads KEY=VALUE lines of the demo file.
func readDemoEnv() map[string]string {
	out := map[string]string{}
	f, err := os.Open(demoEnvFile)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			out[k] = v
		}
	}
	return out
}

func writeDemoEnv(env map[string]string) error {
	if err := os.MkdirAll(demoDir, 0o700); err != nil {
		return err
	}
	var b strings.Builder
	for _, k := range []string{"HERALD_JWT_SECRET", "HERALD_ADMIN_USER", "HERALD_ADMIN_PASSWORD", "HERALD_ENCRYPTION_KEY", "HERALD_DEMO_API_KEY"} {
		if v, ok := env[k]; ok {
			fmt.Fprintf(&b, "%s=%s\n", k, v)
		}
	}
	return os.WriteFile(demoEnvFile, []byte(b.String()), 0o600)
}

// prepareDemoEnv generates (once) and exports the demo's secrets, and permits
// loopback endpoints for the demo receiver. Variables already set win.
func prepareDemoEnv() error {
	env := readDemoEnv()
	defaults := map[string]string{
		"HERALD_JWT_SECRET": randomHex(32), "HERALD_ADMIN_USER": "admin",
		"HERALD_ADMIN_PASSWORD": randomHex(8), "HERALD_ENCRYPTION_KEY": randomHex(32),
	}
	for k, v := range defaults {
		if env[k] == "" {
			env[k] = v
		}
	}
	if err := writeDemoEnv(env); err != nil {
		return fmt.Errorf("write %s: %w", demoEnvFile, err)
	}
	for k, v := range env {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	os.Setenv("HERALD_ALLOW_PRIVATE_ENDPOINTS", "true")
	return nil
}

// runDemo creates (idempotently) the demo topic, receiver group and API key, starts
// the receiver, prints how to use them and runs every role.
func runDemo(ctx context.Context, log *slog.Logger, a *app.App) error {
	recvAddr := os.Getenv("HERALD_DEMO_RECEIVER_ADDR")
	if recvAddr == "" {
		recvAddr = "127.0.0.1:8181"
	}
	ln, err := net.Listen("tcp", recvAddr)
	if err != nil {
		return fmt.Errorf("demo receiver: %w", err)
	}
	recv := demo.NewReceiver(log, func(ctx context.Context, name string) ([]string, error) {
		g, err := a.Control.GetGroup(ctx, name)
		if err != nil {
			return nil, err
		}
		return g.SigningSecrets(time.Now()), nil
	})
	const topicName, groupName = demoTopic, demoGroup
	if err := setUpDemo(ctx, a.Control, recvAddr); err != nil {
		return err
	}
	env := readDemoEnv()
	key := env["HERALD_DEMO_API_KEY"]
	if prefix, ok := auth.ParseAPIKey(key); !ok || func() bool { _, err := a.Control.APIKeyByPrefix(ctx, prefix); return err != nil }() {
		k, _, err := a.Control.CreateAPIKey(ctx, cliActor, control.APIKeySpec{Name: "demo", Topics: []string{"github.*"}})
		if err != nil {
			return err
		}
		key = k
		env["HERALD_DEMO_API_KEY"] = key
		if err := writeDemoEnv(env); err != nil {
			return err
		}
	}
	req, _ := json.Marshal(map[string]any{"messages": []map[string]any{{"body": json.RawMessage(demo.PushPayload), "tag": "push", "key": "octo-org/demo"}}})
	reqFile, err := filepath.Abs(filepath.Join(demoDir, "push-request.json"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(reqFile, req, 0o600); err != nil {
		return err
	}
	base := "http://" + displayAddr(a.Cfg.HTTPAddr)
	fmt.Printf(`
Herald demo is running.
  API base URL   %[1]s   (OpenAPI: %[1]s/openapi.yaml)
  console        %[1]s/console/   user %[2]s, password %[3]s (the same for POST %[1]s/api/v1/auth/login)
  API key        %[4]s   (topics github.*)
  demo receiver  http://%[5]s/webhook  (group %[6]s, topic %[7]s; logs "delivery verified")
  metrics        http://%[8]s/metrics

Publish a real GitHub push payload:
  curl -sS -X POST %[1]s/v1/topics/%[7]s/messages -H 'Authorization: Bearer %[4]s' -H 'Content-Type: application/json' --data-binary @%[9]s

Secrets live in %[10]s. Stop with Ctrl-C.

`, base, a.Cfg.AdminUser, a.Cfg.AdminPassword, key, recvAddr, groupName, topicName, a.Cfg.MetricsAddr, reqFile, demoEnvFile)
	eg, ctx := errgroup.WithContext(ctx)
	eg.Go(func() error { return recv.Run(ctx, ln) })
	eg.Go(func() error { return a.Run(ctx, nil) })
	err = eg.Wait()
	log.Info("herald stopped", "roles", "all --demo", "err", err)
	return err
}

// The demo's topic and its receiver's group.
const demoTopic, demoGroup = "github.events", "demo-receiver"

// setUpDemo creates, through ctl (validated and audited as the CLI), the demo topic
// (4 queues) and the group posting it to the receiver at recvAddr, unless they
// exist; an existing group whose endpoint is another address is pointed at recvAddr
// (HERALD_DEMO_RECEIVER_ADDR changed since it was made).
func setUpDemo(ctx context.Context, ctl *control.Control, recvAddr string) error {
	queues := 4
	if _, err := ctl.CreateTopic(ctx, cliActor, control.TopicSpec{Name: demoTopic, Queues: &queues}); err != nil && !errors.Is(err, models.ErrConflict) {
		return fmt.Errorf("create the demo topic: %w", err)
	}
	url := "http://" + recvAddr + "/webhook"
	_, err := ctl.CreateGroup(ctx, cliActor, control.GroupSpec{Name: demoGroup, EndpointURL: url,
		Subscriptions: []models.Subscription{{Topic: demoTopic}}})
	if !errors.Is(err, models.ErrConflict) {
		if err != nil {
			return fmt.Errorf("create the demo group: %w", err)
		}
		return nil
	}
	g, err := ctl.GetGroup(ctx, demoGroup)
	if err != nil {
		return err
	}
	if g.EndpointURL != url {
		if _, _, err := ctl.PatchGroup(ctx, cliActor, demoGroup, control.GroupPatch{EndpointURL: &url}); err != nil {
			return fmt.Errorf("point the demo group at %s: %w", url, err)
		}
	}
	return nil
}

func displayAddr(addr string) string {
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}
