package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/ssrf"
)

// Kind is what a POST's response means for its messages (2xx, partial, throttle, 410, failure).
type Kind string

const (
	// KindDelivered: 2xx; every message of the batch is done.
	KindDelivered Kind = "delivered"
	// KindPartial: 2xx with {"failed":["msg_…"]}: the listed messages failed, the rest are delivered (PMQ's failIds, AWS Lambda's batchItemFailures).
	KindPartial Kind = "partial"
	// KindThrottled: 429, or 503 with Retry-After: messages returned, no attempt counted.
	KindThrottled Kind = "throttled"
	// KindGone: 410: the group is paused with a reason, messages returned.
	KindGone Kind = "gone"
	// KindFailed: any other status or a transport error; an attempt is counted.
	KindFailed Kind = "failed"
)

// Kinds lists every Kind.
func Kinds() []Kind { return []Kind{KindDelivered, KindPartial, KindThrottled, KindGone, KindFailed} }

// Retry-After clamps: a throttle pauses the group for at least 1 s, at most 10 min;
// a 429 without a readable Retry-After waits 5 s.
const (
	MinRetryAfter     = time.Second
	MaxRetryAfter     = 10 * time.Minute
	DefaultRetryAfter = 5 * time.Second
)

// Outcome is the classified result of one POST. Status is the HTTP status (0 when
// no response came); Class is set for KindFailed and KindPartial; Failed lists the
// message ids a partial answer named; RetryAfter is the clamped delay a throttle
// asked for.
type Outcome struct {
	Kind       Kind
	Status     int
	Class      delivery.ErrorClass
	Failed     []string
	RetryAfter time.Duration
}

// Classify turns a response (status 0 and err set when none) into an Outcome:
// retryAfter is the Retry-After header, body the start of the response body.
func Classify(status int, retryAfter string, body []byte, err error) Outcome {
	if err != nil {
		return Outcome{Kind: KindFailed, Class: classifyErr(err)}
	}
	switch {
	case status >= 200 && status < 300:
		return classifySuccess(status, body)
	case status == http.StatusTooManyRequests:
		ra, ok := parseRetryAfter(retryAfter, time.Now())
		if !ok {
			ra = DefaultRetryAfter
		}
		return Outcome{Kind: KindThrottled, Status: status, RetryAfter: ra}
	case status == http.StatusServiceUnavailable && retryAfter != "":
		if ra, ok := parseRetryAfter(retryAfter, time.Now()); ok {
			return Outcome{Kind: KindThrottled, Status: status, RetryAfter: ra}
		}
		return Outcome{Kind: KindFailed, Status: status, Class: delivery.ClassHTTPStatus}
	case status == http.StatusGone:
		return Outcome{Kind: KindGone, Status: status}
	case status >= 300 && status < 400:
		return Outcome{Kind: KindFailed, Status: status, Class: delivery.ClassRedirect}
	default:
		return Outcome{Kind: KindFailed, Status: status, Class: delivery.ClassHTTPStatus}
	}
}

// classifySuccess reads a 2xx body: empty, non-JSON or without "failed" means all
// delivered; {"failed":["msg_…",…]} a partial failure; any other "failed" value fails
// the whole batch.
func classifySuccess(status int, body []byte) Outcome {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || !bytes.Contains(body, []byte(`"failed"`)) {
		return Outcome{Kind: KindDelivered, Status: status}
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) != nil {
		return Outcome{Kind: KindDelivered, Status: status}
	}
	raw, ok := probe["failed"]
	if !ok {
		return Outcome{Kind: KindDelivered, Status: status}
	}
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil {
		return Outcome{Kind: KindFailed, Status: status, Class: delivery.ClassPartialMalformed}
	}
	if len(ids) == 0 {
		return Outcome{Kind: KindDelivered, Status: status}
	}
	return Outcome{Kind: KindPartial, Status: status, Class: delivery.ClassPartialFailure, Failed: ids}
}

// parseRetryAfter reads delta-seconds or an HTTP date, clamped to [1 s, 10 min].
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(min(n, 1<<20)) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return 0, false
	}
	return min(max(d, MinRetryAfter), MaxRetryAfter), true
}

// classifyErr names a transport error (or one reading the answer). The order
// matters: a blocked address or a spent deadline wins over the error it surfaced
// as; anything unrecognised is ClassOther.
func classifyErr(err error) delivery.ErrorClass {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var urlErr *url.Error
	var tlsRec tls.RecordHeaderError
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.Is(err, ssrf.ErrBlocked):
		return delivery.ClassBlocked
	case errors.Is(err, context.DeadlineExceeded):
		return delivery.ClassTimeout
	case errors.As(err, &dnsErr):
		return delivery.ClassDNS
	case errors.As(err, &tlsRec), errors.As(err, &certErr), errors.Is(err, http.ErrSchemeMismatch),
		errors.As(err, &opErr) && opErr.Op == "remote error":
		// ErrSchemeMismatch: an https endpoint answered the handshake in plain HTTP;
		// "remote error": the endpoint sent a TLS alert (crypto/tls's wording).
		return delivery.ClassTLS
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return delivery.ClassReset
	case errors.As(err, &opErr) && opErr.Op == "dial":
		if opErr.Timeout() {
			return delivery.ClassTimeout
		}
		return delivery.ClassConnect
	case errors.As(err, &urlErr) && urlErr.Timeout():
		return delivery.ClassTimeout
	}
	return delivery.ClassOther
}

// String renders an outcome for a report's last error, e.g. "http_status 500" or
// "partial_failure 200".
func (o Outcome) String() string {
	switch o.Kind {
	case KindDelivered:
		return string(o.Kind)
	case KindThrottled, KindGone:
		return string(o.Kind) + " " + strconv.Itoa(o.Status)
	}
	if o.Status > 0 {
		return string(o.Class) + " " + strconv.Itoa(o.Status)
	}
	return string(o.Class)
}
