package heraldtest

import (
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

// Delivery is one request a Receiver accepted.
type Delivery struct {
	ID       string
	Body     []byte
	Header   http.Header
	At       time.Time
	Verified bool
}

// Receiver is a loopback webhook endpoint that verifies every request with the
// official Standard Webhooks Go library and records it. Respond, when set, decides
// the status for each request (default 204).
type Receiver struct {
	t        testing.TB
	URL      string
	mu       sync.Mutex
	verifier *standardwebhooks.Webhook
	byID     map[string][]Delivery
	order    []string
	bad      int
	inFlight int
	maxInFl  int
	Respond  func(d Delivery) int
	// Body, when set, gives the response body for each request (default empty).
	Body func(d Delivery) string
	// Header, when set, gives extra response headers for each request.
	Header func(d Delivery) http.Header
}

// NewReceiver starts a receiver on 127.0.0.1 and stops it when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{t: t, byID: map[string][]Delivery{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r.URL = "http://" + ln.Addr().String() + "/hook"
	return r
}

// SetSecret sets the group's signing secret the receiver verifies against.
func (r *Receiver) SetSecret(secret string) {
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(r.t, err)
	r.mu.Lock()
	r.verifier = wh
	r.mu.Unlock()
}

// ServeHTTP verifies, records and answers.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(400)
		return
	}
	r.mu.Lock()
	r.inFlight++
	r.maxInFl = max(r.maxInFl, r.inFlight)
	wh := r.verifier
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.inFlight--; r.mu.Unlock() }()
	d := Delivery{ID: req.Header.Get("webhook-id"), Body: body, Header: req.Header.Clone(), At: time.Now()}
	d.Verified = wh != nil && wh.Verify(body, req.Header) == nil
	status := 204
	if r.Respond != nil {
		status = r.Respond(d)
	}
	r.mu.Lock()
	if !d.Verified {
		r.bad++
	}
	if status < 300 {
		if _, seen := r.byID[d.ID]; !seen {
			r.order = append(r.order, d.ID)
		}
		r.byID[d.ID] = append(r.byID[d.ID], d)
	}
	r.mu.Unlock()
	if r.Header != nil {
		for k, v := range r.Header(d) {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(status)
	if r.Body != nil {
		_, _ = io.WriteString(w, r.Body(d))
	}
}

// Count returns how many distinct webhook-ids were accepted.
func (r *Receiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// Unverified returns how many requests failed signature verification.
func (r *Receiver) Unverified() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}

// InFlight returns how many requests the receiver has open now (read, not yet
// answered).
func (r *Receiver) InFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inFlight
}

// MaxInFlight returns the most requests the receiver had open at once.
func (r *Receiver) MaxInFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxInFl
}

// Get returns every accepted delivery of one webhook-id.
func (r *Receiver) Get(id string) []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.byID[id]...)
}

// All returns the first accepted delivery of each webhook-id.
func (r *Receiver) All() map[string]Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Delivery, len(r.byID))
	for id, ds := range r.byID {
		out[id] = ds[0]
	}
	return out
}

// WaitCount waits until at least n distinct webhook-ids were accepted.
func (r *Receiver) WaitCount(n int, within time.Duration) {
	r.t.Helper()
	require.Eventually(r.t, func() bool { return r.Count() >= n }, within, 5*time.Millisecond,
		"receiver got %d of %d messages", r.Count(), n)
}

// WaitIDs waits until every webhook-id in ids was accepted at least once; on
// timeout it fails the test naming up to ten ids still missing.
func (r *Receiver) WaitIDs(ids []string, within time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var missing []string
		r.mu.Lock()
		for _, id := range ids {
			if _, ok := r.byID[id]; !ok {
				missing = append(missing, id)
			}
		}
		r.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d of %d webhook-ids never accepted within %s, among them %v", len(missing), len(ids), within, missing[:min(len(missing), 10)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
