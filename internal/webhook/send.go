package webhook

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
)

// ExcerptBytes caps the start of a non-2xx answer kept as its excerpt (4 KiB).
const ExcerptBytes = 4 << 10

// NewClient returns an HTTP client for webhook POSTs: no proxy, no redirects
// followed, the SSRF guard on every dialled IP (10 s to connect, 10 s for the TLS
// handshake), no compression asked for, and enough idle connections per host for a
// group's max_in_flight (no new connection per POST on the hot path). The POST's
// own timeout is Send's.
func NewClient(guard ssrf.Guard) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: guard.Control}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   models.MaxMaxInFlight,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Result is a sent POST's classified answer. Head is the start of the response
// body: for a 2xx up to the read cap (what Classify read for {"failed":[…]}),
// otherwise up to ExcerptBytes; nil when nothing was read. Err is the transport
// error (or the one reading the answer) a failure was classified from. Latency runs
// from the request's start to the response headers (or the error).
type Result struct {
	Outcome
	Head    []byte
	Err     error
	Latency time.Duration
}

// Send builds p (signed at once), POSTs it with client and classifies the answer,
// all within timeout (the group's timeout_ms, reading the answer included). A 2xx
// body is read up to capBytes bytes (config.Worker.ResponseCapBytes); a non-2xx one
// is kept up to ExcerptBytes and drained up to capBytes more. The error is only
// Post.Request's: then nothing was sent; a failed POST is a Result.
func Send(ctx context.Context, client *http.Client, p *Post, timeout time.Duration, capBytes int64) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	req, err := p.Request(ctx, start)
	if err != nil {
		return Result{}, err
	}
	resp, err := client.Do(req)
	lat := time.Since(start)
	if err != nil {
		return Result{Outcome: Classify(0, "", nil, err), Err: err, Latency: lat}, nil
	}
	defer resp.Body.Close()
	var head []byte
	if resp.StatusCode >= 200 && resp.StatusCode < 300 && resp.ContentLength != 0 {
		// Only a 2xx body can carry {"failed":[…]}; read it up to the cap.
		head, err = io.ReadAll(io.LimitReader(resp.Body, capBytes))
	} else if resp.StatusCode >= 300 {
		head, err = io.ReadAll(io.LimitReader(resp.Body, ExcerptBytes))
		if err == nil {
			_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, capBytes))
		}
	}
	out := Classify(resp.StatusCode, resp.Header.Get("Retry-After"), head, nil)
	if err != nil && out.Kind != KindDelivered {
		// A reset or timeout while reading the answer is the POST's failure class.
		out = Outcome{Kind: KindFailed, Status: resp.StatusCode, Class: classifyErr(err)}
		return Result{Outcome: out, Head: head, Err: err, Latency: lat}, nil
	}
	return Result{Outcome: out, Head: head, Latency: lat}, nil
}
