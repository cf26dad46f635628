package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/ssrf"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		body       string
		kind       Kind
		class      delivery.ErrorClass
		failed     []string
		ra         time.Duration
	}{
		{"204", 204, "", "", KindDelivered, "", nil, 0},
		{"200 text", 200, "", "ok", KindDelivered, "", nil, 0},
		{"200 other json", 200, "", `{"ok":true}`, KindDelivered, "", nil, 0},
		{"partial", 200, "", `{"failed":["msg_1_2","msg_1_3"]}`, KindPartial, delivery.ClassPartialFailure, []string{"msg_1_2", "msg_1_3"}, 0},
		{"partial empty", 200, "", `{"failed":[]}`, KindDelivered, "", nil, 0},
		{"partial malformed", 200, "", `{"failed":"msg_1_2"}`, KindFailed, delivery.ClassPartialMalformed, nil, 0},
		{"429 no header", 429, "", "", KindThrottled, "", nil, DefaultRetryAfter},
		{"429 seconds", 429, "2", "", KindThrottled, "", nil, 2 * time.Second},
		{"429 clamped low", 429, "0", "", KindThrottled, "", nil, time.Second},
		{"429 clamped high", 429, "99999", "", KindThrottled, "", nil, 10 * time.Minute},
		{"503 retry-after", 503, "3", "", KindThrottled, "", nil, 3 * time.Second},
		{"503 bad retry-after", 503, "soon", "", KindFailed, delivery.ClassHTTPStatus, nil, 0},
		{"503 plain", 503, "", "", KindFailed, delivery.ClassHTTPStatus, nil, 0},
		{"410", 410, "", "", KindGone, "", nil, 0},
		{"413", 413, "", "", KindFailed, delivery.ClassHTTPStatus, nil, 0},
		{"302", 302, "", "", KindFailed, delivery.ClassRedirect, nil, 0},
		{"500", 500, "", "", KindFailed, delivery.ClassHTTPStatus, nil, 0},
	} {
		o := Classify(tc.status, tc.retryAfter, []byte(tc.body), nil)
		require.Equal(t, tc.kind, o.Kind, tc.name)
		require.Equal(t, tc.class, o.Class, tc.name)
		require.Equal(t, tc.failed, o.Failed, tc.name)
		require.Equal(t, tc.ra, o.RetryAfter, tc.name)
	}
	d, ok := parseRetryAfter(time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat), time.Now())
	require.True(t, ok)
	require.InDelta(t, 90, d.Seconds(), 2, "HTTP date")
}

// timeoutErr is a net.Error that timed out, as a deadline on a connection reports.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestClassifyErrors covers every transport error class, wrapped as http.Client
// returns them (*url.Error around *net.OpError).
func TestClassifyErrors(t *testing.T) {
	t.Parallel()
	post := func(err error) error { return &url.Error{Op: "Post", URL: "https://rx.example/hook", Err: err} }
	dial := func(err error) error { return post(&net.OpError{Op: "dial", Net: "tcp", Err: err}) }
	for _, tc := range []struct {
		name string
		err  error
		want delivery.ErrorClass
	}{
		{"blocked", dial(fmt.Errorf("127.0.0.1:80: %w", ssrf.ErrBlocked)), delivery.ClassBlocked},
		{"deadline", post(context.DeadlineExceeded), delivery.ClassTimeout},
		{"dns", dial(&net.DNSError{Err: "no such host", Name: "rx.invalid", IsNotFound: true}), delivery.ClassDNS},
		{"tls record header", post(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), delivery.ClassTLS},
		{"tls alert", post(&net.OpError{Op: "remote error", Err: errors.New("tls: handshake failure")}), delivery.ClassTLS},
		{"plain http on https", post(http.ErrSchemeMismatch), delivery.ClassTLS},
		{"tls certificate", post(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), delivery.ClassTLS},
		{"reset", post(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), delivery.ClassReset},
		{"broken pipe", post(&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}), delivery.ClassReset},
		{"refused", dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), delivery.ClassConnect},
		{"dial timeout", dial(timeoutErr{}), delivery.ClassTimeout},
		{"read timeout", post(timeoutErr{}), delivery.ClassTimeout},
		{"eof", post(io.EOF), delivery.ClassOther},
		{"unknown", errors.New("something else"), delivery.ClassOther},
	} {
		o := Classify(0, "", nil, tc.err)
		require.Equal(t, KindFailed, o.Kind, tc.name)
		require.Equal(t, tc.want, o.Class, tc.name)
		require.Zero(t, o.Status, tc.name)
	}
}

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    Outcome
		want string
	}{
		{Outcome{Kind: KindDelivered, Status: 200}, "delivered"},
		{Outcome{Kind: KindThrottled, Status: 429}, "throttled 429"},
		{Outcome{Kind: KindGone, Status: 410}, "gone 410"},
		{Outcome{Kind: KindPartial, Status: 200, Class: delivery.ClassPartialFailure}, "partial_failure 200"},
		{Outcome{Kind: KindFailed, Status: 500, Class: delivery.ClassHTTPStatus}, "http_status 500"},
		{Outcome{Kind: KindFailed, Class: delivery.ClassTimeout}, "timeout"},
	} {
		require.Equal(t, tc.want, tc.o.String())
	}
}
