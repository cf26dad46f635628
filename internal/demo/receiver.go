// Package demo is the receiver `make run` starts beside Herald: a loopback webhook
// endpoint that verifies every request's Standard Webhooks signature and logs what
// it got, so a new user sees deliveries arrive.
package demo

import (
	"context"
	_ "embed"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/signing"
)

// SecretsFunc returns the `whsec_` secrets that currently sign for the named group.
type SecretsFunc func(ctx context.Context, group string) ([]string, error)

// Receiver verifies and logs deliveries for any consumer group whose endpoint is
// the receiver: it looks the group's secrets up by the herald-group header.
type Receiver struct {
	secrets  SecretsFunc
	log      *slog.Logger
	Verified atomic.Int64
	Rejected atomic.Int64
}

// NewReceiver returns a Receiver that verifies with secrets and logs to log.
func NewReceiver(log *slog.Logger, secrets SecretsFunc) *Receiver {
	return &Receiver{log: log, secrets: secrets}
}

func (r *Receiver) verify(req *http.Request, id string, ts int64, body []byte) bool {
	secrets, err := r.secrets(req.Context(), req.Header.Get("herald-group"))
	if err != nil {
		return false
	}
	for _, sec := range secrets {
		if s, err := signing.NewSigner(sec); err == nil && s.Verify(id, ts, body, req.Header.Get("webhook-signature")) {
			return true
		}
	}
	return false
}

// ServeHTTP answers 204 for a verified request and 401 otherwise.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	id := req.Header.Get("webhook-id")
	ts, _ := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
	age := time.Since(time.Unix(ts, 0))
	if !r.verify(req, id, ts, body) || age > 5*time.Minute || age < -5*time.Minute {
		r.Rejected.Add(1)
		r.log.Warn("demo receiver: signature NOT verified", "webhook_id", id, "group", req.Header.Get("herald-group"))
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	r.Verified.Add(1)
	r.log.Info("demo receiver: delivery verified", "webhook_id", id, "group", req.Header.Get("herald-group"), "topic", req.Header.Get("herald-topic"),
		"tag", req.Header.Get("herald-tag"), "bytes", len(body), "attempt", req.Header.Get("herald-attempt"))
	w.WriteHeader(http.StatusNoContent)
}

// Run serves the receiver at addr until ctx ends.
func (r *Receiver) Run(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// PushPayload is a real GitHub push webhook (from @octokit/webhooks-examples, MIT),
// the body of the demo's curl line.
//
//go:embed push.json
var PushPayload []byte
