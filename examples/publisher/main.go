// Command publisher publishes one JSON message with Herald's Go client:
//
//	HERALD_URL=http://127.0.0.1:8080 HERALD_API_KEY=hk_… go run ./examples/publisher orders
//
// Publish retries a 429, a 5xx or a lost answer with the same Idempotency-Key, so
// a message is stored once however often it is retried.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/heraldhq/herald/client"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: publisher <topic>")
	}
	url := os.Getenv("HERALD_URL")
	if url == "" {
		url = client.DefaultURL
	}
	c := client.New(url, client.WithAPIKey(os.Getenv("HERALD_API_KEY")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	msg, err := client.JSON(map[string]any{"order_id": 42, "total_cents": 1999})
	if err != nil {
		log.Fatal(err)
	}
	msg.Tag, msg.Key = "created", "order-42" // one key, one queue: per-key order
	ids, err := c.Publish(ctx, os.Args[1], []client.Message{msg}, client.WithIdempotencyKey("order-42-created"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored", ids[0].ID)
}
