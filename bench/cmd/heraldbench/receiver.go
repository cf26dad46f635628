package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// receiver is the loopback webhook endpoint: POST /hook/{sink}. Each scenario has
// its own sink, so counts never mix.
type receiver struct {
	srv   *http.Server
	addr  string
	mu    sync.RWMutex
	sinks map[string]*sink
	bufs  sync.Pool
	conns atomic.Int64 // TCP connections accepted so far
}

// delivery is the first receipt of one webhook-id: first when its request reached
// the handler (headers read), at when its body was read whole.
type delivery struct {
	first, at time.Time
	hash      [sha256.Size]byte
}

// sink counts what one group delivered: distinct ids with receive time and body
// hash, duplicates, and a sampled signature check (every sigEvery-th request).
type sink struct {
	mu       sync.Mutex
	secret   []byte
	got      map[string]delivery
	last     time.Time
	total    int64
	dups     int64
	noID     int64
	sigOK    int64
	sigBad   int64
	sigEvery int64
}

func startReceiver() (*receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{addr: l.Addr().String(), sinks: map[string]*sink{}}
	r.bufs.New = func() any { return new(bytes.Buffer) }
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hook/{sink}", r.handle)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				r.conns.Add(1)
			}
		}}
	go r.srv.Serve(l)
	return r, nil
}

// newSink registers a sink and returns it with its endpoint URL.
func (r *receiver) newSink(name string) (*sink, string) {
	s := &sink{got: map[string]delivery{}, sigEvery: 200}
	r.mu.Lock()
	r.sinks[name] = s
	r.mu.Unlock()
	return s, "http://" + r.addr + "/hook/" + name
}

func (r *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

func (r *receiver) handle(w http.ResponseWriter, req *http.Request) {
	first := time.Now()
	r.mu.RLock()
	s := r.sinks[req.PathValue("sink")]
	r.mu.RUnlock()
	if s == nil {
		http.Error(w, "no such sink", http.StatusGone)
		return
	}
	buf := r.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := io.Copy(buf, req.Body)
	at := time.Now()
	if err != nil {
		r.bufs.Put(buf)
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	s.record(req.Header, buf.Bytes(), first, at)
	r.bufs.Put(buf)
	w.WriteHeader(http.StatusNoContent)
}

func (s *sink) record(h http.Header, body []byte, first, at time.Time) {
	id := h.Get("webhook-id")
	sum := sha256.Sum256(body)
	s.mu.Lock()
	s.total++
	n := s.total
	switch _, seen := s.got[id]; {
	case id == "":
		s.noID++
	case seen:
		s.dups++
	default:
		s.got[id] = delivery{first: first, at: at, hash: sum}
		if at.After(s.last) {
			s.last = at
		}
	}
	secret := s.secret
	s.mu.Unlock()
	if secret != nil && n%s.sigEvery == 1 {
		ok := verifySignature(secret, id, h.Get("webhook-timestamp"), h.Get("webhook-signature"), body)
		s.mu.Lock()
		if ok {
			s.sigOK++
		} else {
			s.sigBad++
		}
		s.mu.Unlock()
	}
}

// setSecret sets the group's whsec_ secret used for the sampled signature check.
func (s *sink) setSecret(whsec string) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(whsec, "whsec_"))
	if err != nil || !strings.HasPrefix(whsec, "whsec_") {
		return errors.New("signing secret is not whsec_<base64>")
	}
	s.mu.Lock()
	s.secret = key
	s.mu.Unlock()
	return nil
}

// verifySignature checks a Standard Webhooks v1 signature list against the body.
func verifySignature(key []byte, id, ts, header string, body []byte) bool {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for sig := range strings.FieldsSeq(header) {
		if v, ok := strings.CutPrefix(sig, "v1,"); ok && hmac.Equal([]byte(v), []byte(want)) {
			return true
		}
	}
	return false
}

// sinkStats is a copy of a sink's counters.
type sinkStats struct {
	distinct, total, dups, noID, sigOK, sigBad int64
	last                                       time.Time
}

func (s *sink) stats() sinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sinkStats{int64(len(s.got)), s.total, s.dups, s.noID, s.sigOK, s.sigBad, s.last}
}

// lookup returns the first delivery of id.
func (s *sink) lookup(id string) (delivery, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.got[id]
	return d, ok
}

// waitDistinct waits until n distinct ids arrived; it returns false on ctx's end.
func (s *sink) waitDistinct(ctx context.Context, n int) bool {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		if s.stats().distinct >= int64(n) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// timeline returns when the first delivery arrived after start, and distinct receipts
// per whole second after start (the last, partial second left out); receipts before
// start are left out.
func (s *sink) timeline(start time.Time) (first time.Duration, perSecond []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first = -1
	last := s.last.Sub(start)
	buckets := make([]int, int(last/time.Second)+1)
	for _, d := range s.got {
		off := d.at.Sub(start)
		if off < 0 {
			continue
		}
		if first < 0 || off < first {
			first = off
		}
		if i := int(off / time.Second); i >= 0 && i < len(buckets) {
			buckets[i]++
		}
	}
	return first, buckets[:len(buckets)-1]
}
