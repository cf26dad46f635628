package client_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/signing"
)

var secret = signing.NewSecret()

// signed returns the headers Herald's signer puts on a delivery of body.
func signed(id string, at time.Time, body []byte, secrets ...string) http.Header {
	if secrets == nil {
		secrets = []string{secret}
	}
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
	var sigs string
	for i, s := range secrets {
		sg, _ := signing.NewSigner(s)
		if i > 0 {
			sigs += " "
		}
		sigs += sg.Sign(id, at.Unix(), body)
	}
	h.Set("webhook-signature", sigs)
	return h
}

// TestVerifier: Herald's signatures verify; a changed body, id or secret, a
// timestamp more than 5 minutes away, or a missing header do not.
func TestVerifier(t *testing.T) {
	t.Parallel()
	now := time.Now()
	body := []byte(`{"id":42}`)
	other := signing.NewSecret()
	v, err := client.NewVerifier(secret)
	require.NoError(t, err)
	rotated, err := client.NewVerifier(other, secret)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		v    *client.Verifier
		h    http.Header
		body []byte
		want error
	}{
		{"valid", v, signed("msg_1_2", now, body), body, nil},
		{"one of two signatures (rotation)", v, signed("msg_1_2", now, body, other, secret), body, nil},
		{"verifier with the previous secret too", rotated, signed("msg_1_2", now, body), body, nil},
		{"4 min old", v, signed("msg_1_2", now.Add(-4*time.Minute), body), body, nil},
		{"tampered body", v, signed("msg_1_2", now, body), []byte(`{"id":43}`), client.ErrSignature},
		{"other secret", v, signed("msg_1_2", now, body, other), body, client.ErrSignature},
		{"6 min old", v, signed("msg_1_2", now.Add(-6*time.Minute), body), body, client.ErrTimestamp},
		{"6 min ahead", v, signed("msg_1_2", now.Add(6*time.Minute), body), body, client.ErrTimestamp},
		{"no headers", v, http.Header{}, body, client.ErrMissingHeaders},
	} {
		err := tc.v.Verify(tc.h, tc.body)
		if tc.want == nil {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, tc.want, tc.name)
		}
	}
	h := signed("msg_1_2", now, body)
	h.Set("webhook-id", "msg_1_3")
	require.ErrorIs(t, v.Verify(h, body), client.ErrSignature, "the id is signed")
	_, err = client.NewVerifier("whsec_not base64!")
	require.Error(t, err)
}

// TestParseDelivery: a single message from its headers, a batch from its envelope
// (JSON and base64 bodies), and partial-failure answers.
func TestParseDelivery(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set("webhook-id", "msg_5_17")
	h.Set("herald-topic", "orders")
	h.Set("herald-tag", "created")
	h.Set("herald-key", "o-1")
	h.Set("herald-attempt", "3")
	h.Set("Content-Type", "application/json")
	h.Set("X-Source", "shop")
	ms, err := client.ParseDelivery(h, []byte(`{"a":1}`))
	require.NoError(t, err)
	require.Equal(t, []client.Delivered{{ID: "msg_5_17", Topic: "orders", Queue: 5, Offset: 17, Tag: "created", Key: "o-1",
		Headers: map[string]string{"x-source": "shop"}, Attempt: 3, ContentType: "application/json", Body: []byte(`{"a":1}`)}}, ms)

	h = http.Header{}
	h.Set("webhook-id", "bat_abc")
	ms, err = client.ParseDelivery(h, []byte(`{"messages":[
		{"id":"msg_1_1","topic":"t","queue":1,"offset":1,"tag":"","key":"","headers":{},"published_at":"2026-01-02T03:04:05.678Z","attempt":1,"content_type":"application/json","body":{"x": [1, 2]}},
		{"id":"msg_1_2","topic":"t","queue":1,"offset":2,"tag":"","key":"","headers":{"x-a":"b"},"published_at":"2026-01-02T03:04:05.678Z","attempt":2,"content_type":"text/plain","body_base64":"aGk="}]}`))
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.Equal(t, `{"x": [1, 2]}`, string(ms[0].Body), "embedded JSON kept byte for byte")
	require.Equal(t, "hi", string(ms[1].Body))
	require.Equal(t, "b", ms[1].Headers["x-a"])
	require.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC), ms[0].PublishedAt.UTC())
	_, err = client.ParseDelivery(h, []byte(`{"nope":1}`))
	require.ErrorIs(t, err, client.ErrEnvelope)

	require.JSONEq(t, `{"failed":["msg_1_2"]}`, string(client.PartialFailure("msg_1_2")))
	require.JSONEq(t, `{"failed":[]}`, string(client.PartialFailure()))
}
