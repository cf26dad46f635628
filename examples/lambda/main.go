// Command lambda shows a Herald receiver as an AWS-Lambda-style function behind
// an HTTP trigger (API Gateway or a function URL). Request and Response mirror
// the fields of the payload format 2.0 it uses, so this example needs no AWS
// module; with github.com/aws/aws-lambda-go pass Handle to lambda.Start with
// events.APIGatewayV2HTTPRequest and events.APIGatewayV2HTTPResponse instead.
//
// Run locally, it reads one event as JSON on standard input and prints the answer:
//
//	HERALD_SIGNING_SECRET=whsec_… go run ./examples/lambda < event.json
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log"
	"net/http"
	"os"

	"github.com/heraldhq/herald/client"
)

// Request is the part of an HTTP-triggered function's event a receiver needs.
type Request struct {
	Headers         map[string]string `json:"headers"`
	Body            string            `json:"body"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
}

// Response is the function's answer to the trigger.
type Response struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       string            `json:"body,omitempty"`
}

var verifier *client.Verifier

// Handle verifies and processes one delivery: 401 for a bad signature, 200 with
// {"failed":[…]} when some messages failed (only those are retried), 204 otherwise.
func Handle(ctx context.Context, req Request) (Response, error) {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return Response{StatusCode: http.StatusBadRequest}, nil
		}
		body = b
	}
	h := http.Header{}
	for k, v := range req.Headers { // triggers lower-case header names
		h.Set(k, v)
	}
	if err := verifier.Verify(h, body); err != nil {
		return Response{StatusCode: http.StatusUnauthorized, Body: err.Error()}, nil
	}
	msgs, err := client.ParseDelivery(h, body)
	if err != nil {
		return Response{StatusCode: http.StatusBadRequest, Body: err.Error()}, nil
	}
	var failed []string
	for _, m := range msgs {
		if err := process(ctx, m); err != nil {
			failed = append(failed, m.ID)
		}
	}
	if len(failed) > 0 {
		return Response{StatusCode: http.StatusOK, Headers: map[string]string{"Content-Type": "application/json"},
			Body: string(client.PartialFailure(failed...))}, nil
	}
	return Response{StatusCode: http.StatusNoContent}, nil
}

func process(_ context.Context, m client.Delivered) error {
	log.Printf("%s %s attempt=%d %s", m.ID, m.Topic, m.Attempt, m.Body)
	return nil
}

func main() {
	var err error
	if verifier, err = client.NewVerifier(os.Getenv("HERALD_SIGNING_SECRET")); err != nil {
		log.Fatal(err)
	}
	var req Request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		log.Fatal(err)
	}
	resp, err := Handle(context.Background(), req)
	if err != nil {
		log.Fatal(err)
	}
	_ = json.NewEncoder(os.Stdout).Encode(resp)
}
