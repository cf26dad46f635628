package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/signing"
)

// TestHandleConcurrentDeliveries calls Handle from 16 goroutines at once, as a
// function runtime with concurrent invocations in one process would, with signed
// events of single messages and batches (half of them base64-encoded, as API
// Gateway passes binary bodies): each answers 204, and one with a signature of
// another secret 401.
func TestHandleConcurrentDeliveries(t *testing.T) {
	log.SetOutput(io.Discard)
	secret := signing.NewSecret()
	var err error
	verifier, err = client.NewVerifier(secret)
	require.NoError(t, err)
	signer, err := signing.NewSigner(secret)
	require.NoError(t, err)
	other, err := signing.NewSigner(signing.NewSecret())
	require.NoError(t, err)

	event := func(i int, s *signing.Signer) Request {
		id := fmt.Sprintf("msg_1_%d", i+1)
		body := []byte(fmt.Sprintf(`{"n":%d}`, i))
		if i%2 == 1 {
			id = fmt.Sprintf("bat_%d", i)
			body = []byte(fmt.Sprintf(`{"messages":[{"id":"msg_2_%d","topic":"orders","attempt":1,"body":{"n":%d}},`+
				`{"id":"msg_2_%d","topic":"orders","attempt":1,"body_base64":"aGk="}]}`, 2*i+1, i, 2*i+2))
		}
		ts := time.Now().Unix()
		req := Request{Headers: map[string]string{"webhook-id": id, "webhook-timestamp": strconv.FormatInt(ts, 10),
			"webhook-signature": s.Sign(id, ts, body), "content-type": "application/json"}, Body: string(body)}
		if i%4 < 2 {
			req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
		return req
	}

	const invocations = 16
	start := make(chan struct{})
	var wg sync.WaitGroup
	answers := make([]Response, invocations)
	errs := make([]error, invocations)
	for i := range invocations {
		wg.Go(func() {
			req := event(i, signer)
			<-start
			answers[i], errs[i] = Handle(context.Background(), req)
		})
	}
	close(start)
	wg.Wait()
	for i := range invocations {
		require.NoError(t, errs[i])
		require.Equal(t, http.StatusNoContent, answers[i].StatusCode, "invocation %d: %s", i, answers[i].Body)
	}

	resp, err := Handle(context.Background(), event(3, other))
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	b, _ := json.Marshal(resp)
	require.Contains(t, string(b), "signature")
}
