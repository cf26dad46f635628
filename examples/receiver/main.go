// Command receiver is a net/http endpoint for a Herald consumer group:
//
//	HERALD_SIGNING_SECRET=whsec_… go run ./examples/receiver :8181
//
// client.Handler verifies each delivery's Standard Webhooks signature (401 on a
// mismatch or a timestamp more than 5 minutes off), parses a batch envelope or
// a single message, and answers {"failed":[…]} for the messages handle could not
// process, so Herald retries only those. Herald sends up to the group's
// max_in_flight deliveries at once (16 by default), so handle runs concurrently.
package main

import (
	"context"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/client"
)

func main() {
	addr := ":8181"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	// During a secret rotation give both secrets, comma-separated.
	v, err := client.NewVerifier(strings.Split(os.Getenv("HERALD_SIGNING_SECRET"), ",")...)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/webhook", client.Handler(v, newReceiver(process).handle))
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Printf("receiving on %s/webhook", addr)
	log.Fatal(srv.ListenAndServe())
}

// receiver processes each message id once. Its seen set is in memory and guarded
// by mu, as deliveries arrive in parallel; a real receiver keeps it in its
// database, in the transaction that applies the message.
type receiver struct {
	process func(context.Context, client.Delivered) error
	mu      sync.Mutex
	seen    map[string]bool // true: processed; false: being processed now
}

func newReceiver(process func(context.Context, client.Delivered) error) *receiver {
	return &receiver{process: process, seen: map[string]bool{}}
}

// handle is the client.HandleFunc. At least once: a message may arrive twice,
// always with its id. A processed one is skipped (acknowledged); one another
// delivery is processing at this moment is answered as failed, so Herald sends it
// again later rather than counting it delivered before it is.
func (r *receiver) handle(ctx context.Context, msgs []client.Delivered) (failed []string, err error) {
	for _, m := range msgs {
		r.mu.Lock()
		done, busy := r.seen[m.ID]
		if !busy {
			r.seen[m.ID] = false
		}
		r.mu.Unlock()
		switch {
		case done:
			continue
		case busy:
			failed = append(failed, m.ID)
			continue
		}
		perr := r.process(ctx, m)
		r.mu.Lock()
		if perr != nil {
			delete(r.seen, m.ID)
		} else {
			r.seen[m.ID] = true
		}
		r.mu.Unlock()
		if perr != nil {
			failed = append(failed, m.ID)
		}
	}
	return failed, nil
}

func process(_ context.Context, m client.Delivered) error {
	log.Printf("%s %s tag=%q key=%q attempt=%d %s", m.ID, m.Topic, m.Tag, m.Key, m.Attempt, m.Body)
	return nil
}
