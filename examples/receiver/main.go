// Command receiver is a net/http endpoint for a Herald consumer group:
//
//	HERALD_SIGNING_SECRET=whsec_… go run ./examples/receiver :8181
//
// client.Handler verifies each delivery's Standard Webhooks signature (401 on a
// mismatch or a timestamp more than 5 minutes off), parses a batch envelope or
// a single message, and answers {"failed":[…]} for the messages handle could not
// process, so Herald retries only those.
package main

import (
	"context"
	"log"
	"net/http"
	"os"
	"strings"
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
	http.Handle("/webhook", client.Handler(v, handle))
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: 5 * time.Second}
	log.Printf("receiving on %s/webhook", addr)
	log.Fatal(srv.ListenAndServe())
}

// seen drops duplicates by message id; a real receiver keeps it in its database.
var seen = map[string]bool{}

func handle(ctx context.Context, msgs []client.Delivered) (failed []string, err error) {
	for _, m := range msgs {
		if seen[m.ID] {
			continue // at least once: a message may arrive twice, always with its id
		}
		if err := process(ctx, m); err != nil {
			failed = append(failed, m.ID)
			continue
		}
		seen[m.ID] = true
	}
	return failed, nil
}

func process(_ context.Context, m client.Delivered) error {
	log.Printf("%s %s tag=%q key=%q attempt=%d %s", m.ID, m.Topic, m.Tag, m.Key, m.Attempt, m.Body)
	return nil
}
