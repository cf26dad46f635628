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

// Receiver verifies and logs deliveries for one consumer group.
type Receiver struct {
	signer   atomic.Pointer[signing.Signer]
	log      *slog.Logger
	Verified atomic.Int64
	Rejected atomic.Int64
}

// NewReceiver returns a Receiver that logs to log.
func NewReceiver(log *slog.Logger) *Receiver { return &Receiver{log: log} }

// SetSecret sets the group's `whsec_` signing secret.
func (r *Receiver) SetSecret(secret string) error {
	s, err := signing.NewSigner(secret)
	if err != nil {
		return err
	}
	r.signer.Store(s)
	return nil
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
	s := r.signer.Load()
	age := time.Since(time.Unix(ts, 0))
	if s == nil || !s.Verify(id, ts, body, req.Header.Get("webhook-signature")) || age > 5*time.Minute || age < -5*time.Minute {
		r.Rejected.Add(1)
		r.log.Warn("demo receiver: signature NOT verified", "webhook_id", id)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	r.Verified.Add(1)
	r.log.Info("demo receiver: delivery verified", "webhook_id", id, "topic", req.Header.Get("herald-topic"),
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
