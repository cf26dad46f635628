package control

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
)

// testExcerptBytes caps the response body a test send returns.
const testExcerptBytes = 4 << 10

// TestSendResult is the outcome of one test POST: the status code (0 when no response
// came), latency in ms, and for failures the error class as in delivery attempts
// (dns, connect, tls, timeout, reset, redirect, blocked_destination, http_status)
// with a detail. ResponseExcerpt is at most 4 KiB of the response body, as text.
type TestSendResult struct {
	OK              bool   `json:"ok"`
	WebhookID       string `json:"webhook_id"`
	StatusCode      int    `json:"status_code"`
	LatencyMS       int64  `json:"latency_ms"`
	ErrorClass      string `json:"error_class,omitempty"`
	Error           string `json:"error,omitempty"`
	ResponseExcerpt string `json:"response_excerpt"`
}

// TestSend POSTs a signed sample (or body, any JSON value) to group name's endpoint
// exactly as a delivery at batch size 1 would go — Standard Webhooks headers signed
// with every valid secret, no redirects, the group's timeout, dialled through the
// SSRF guard — and reports what happened. It never touches cursors or counters.
// Audited as group.test. Errors: models.ErrNotFound; a failed POST is a result, not
// an error.
func (c *Control) TestSend(ctx context.Context, a Actor, name string, body json.RawMessage) (*TestSendResult, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	idb := make([]byte, 8)
	_, _ = rand.Read(idb)
	id := "msg_test_" + hex.EncodeToString(idb)
	if len(body) == 0 {
		body, _ = json.Marshal(map[string]any{"type": "herald.test", "group": g.Name, "webhook_id": id, "sent_at": time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")})
	}
	out := &TestSendResult{WebhookID: id}
	if err := c.guard.CheckURL(ctx, g.EndpointURL); err != nil {
		out.ErrorClass, out.Error = "blocked_destination", err.Error()
		if !errors.Is(err, ssrf.ErrBlocked) {
			out.ErrorClass = "dns"
		}
		c.Record(ctx, a, "group.test", g.Name, nil, out)
		return out, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.EndpointURL, strings.NewReader(string(body)))
	if err != nil {
		return nil, &models.ValidationError{Errors: []models.FieldError{{Pointer: "/endpoint_url", Detail: err.Error()}}}
	}
	ts := time.Now().Unix()
	var sigs []string
	for _, secret := range g.SigningSecrets(time.Now()) {
		signer, err := signing.NewSigner(secret)
		if err != nil {
			return nil, err
		}
		sigs = append(sigs, signer.Sign(id, ts, body))
	}
	for k, v := range g.EndpointAuth.Headers {
		req.Header.Set(k, v)
	}
	if b := g.EndpointAuth.Basic; b != nil {
		req.SetBasicAuth(b.Username, b.Password)
	}
	if g.PushAuth != nil && c.issuer != "" {
		tok, err := c.pushToken(ctx, g, id, time.Unix(ts, 0))
		if err != nil {
			return nil, err
		}
		req.Header.Set("authorization", "Bearer "+tok)
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", strings.Join(sigs, " "))
	req.Header.Set("herald-group", g.Name)
	req.Header.Set("herald-test", "true")
	client := c.testClient(time.Duration(g.TimeoutMS) * time.Millisecond)
	start := time.Now()
	resp, err := client.Do(req)
	out.LatencyMS = time.Since(start).Milliseconds()
	if err != nil {
		out.ErrorClass, out.Error = classifySendError(err), err.Error()
	} else {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, testExcerptBytes))
		resp.Body.Close()
		out.StatusCode = resp.StatusCode
		out.ResponseExcerpt = strings.ToValidUTF8(string(b), "\uFFFD")
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			out.OK = true
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			out.ErrorClass, out.Error = "redirect", "redirects are not followed"
		default:
			out.ErrorClass, out.Error = "http_status", resp.Status
		}
	}
	if !utf8.ValidString(out.Error) {
		out.Error = strings.ToValidUTF8(out.Error, "\uFFFD")
	}
	c.Record(ctx, a, "group.test", g.Name, nil, map[string]any{"ok": out.OK, "status_code": out.StatusCode, "latency_ms": out.LatencyMS, "error_class": out.ErrorClass})
	return out, nil
}

// testClient is a one-off HTTP client like the worker's: no proxy, no redirects,
// the dialler refusing blocked addresses.
func (c *Control) testClient(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, Control: c.guard.Control}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext, TLSHandshakeTimeout: 5 * time.Second,
			DisableKeepAlives: true, ResponseHeaderTimeout: timeout},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// classifySendError names a transport failure with the delivery error classes.
func classifySendError(err error) string {
	var dnsErr *net.DNSError
	var tlsErr *tls.RecordHeaderError
	var certErr *tls.CertificateVerificationError
	var netErr net.Error
	switch {
	case errors.Is(err, ssrf.ErrBlocked):
		return "blocked_destination"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.As(err, &tlsErr), errors.As(err, &certErr):
		return "tls"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "reset"
	}
	return "connect"
}
