package worker

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"strconv"
	"syscall"

	"github.com/heraldhq/herald/internal/ssrf"
)

// Kind is what a POST's response means for its messages (DESIGN §5 outcome table).
type Kind string

const (
	// KindDelivered: 2xx; every message of the batch is done.
	KindDelivered Kind = "delivered"
	// KindFailed: any other status or a transport error; an attempt is counted.
	KindFailed Kind = "failed"
)

// ErrorClass names why a POST failed, as recorded on delivery attempts.
type ErrorClass string

// Error classes of a failed POST.
const (
	ClassDNS        ErrorClass = "dns"
	ClassConnect    ErrorClass = "connect"
	ClassTLS        ErrorClass = "tls"
	ClassTimeout    ErrorClass = "timeout"
	ClassReset      ErrorClass = "reset"
	ClassRedirect   ErrorClass = "redirect"
	ClassBlocked    ErrorClass = "blocked_destination"
	ClassHTTPStatus ErrorClass = "http_status"
	ClassOther      ErrorClass = "other"
)

// Outcome is the classified result of one POST.
type Outcome struct {
	Kind   Kind
	Status int // HTTP status, 0 when no response
	Class  ErrorClass
}

// Classify turns a status code (0 if none) and transport error into an Outcome.
func Classify(status int, err error) Outcome {
	if err != nil {
		return Outcome{Kind: KindFailed, Class: classifyErr(err)}
	}
	switch {
	case status >= 200 && status < 300:
		return Outcome{Kind: KindDelivered, Status: status}
	case status >= 300 && status < 400:
		return Outcome{Kind: KindFailed, Status: status, Class: ClassRedirect}
	default:
		return Outcome{Kind: KindFailed, Status: status, Class: ClassHTTPStatus}
	}
}

func classifyErr(err error) ErrorClass {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var urlErr *url.Error
	var tlsRec tls.RecordHeaderError
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.Is(err, ssrf.ErrBlocked):
		return ClassBlocked
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.As(err, &dnsErr):
		return ClassDNS
	case errors.As(err, &tlsRec), errors.As(err, &certErr):
		return ClassTLS
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return ClassReset
	case errors.As(err, &opErr) && opErr.Op == "dial":
		if opErr.Timeout() {
			return ClassTimeout
		}
		return ClassConnect
	case errors.As(err, &urlErr) && urlErr.Timeout():
		return ClassTimeout
	}
	return ClassOther
}

// String renders an outcome for a report's last error, e.g. "http_status 500".
func (o Outcome) String() string {
	if o.Kind == KindDelivered {
		return "delivered"
	}
	if o.Status > 0 {
		return string(o.Class) + " " + strconv.Itoa(o.Status)
	}
	return string(o.Class)
}
