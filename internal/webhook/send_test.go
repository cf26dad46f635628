package webhook

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/ssrf"
)

// TestSendTransportClasses sends to real loopback endpoints that fail in each way a
// transport can, and checks the class each gets.
func TestSendTransportClasses(t *testing.T) {
	t.Parallel()
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refusedURL := "http://" + refused.Addr().String() + "/"
	refused.Close()

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	hold := make(chan struct{})
	defer close(hold)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			go func() { <-hold; c.Close() }() // never answers: the POST times out
		}
	}()

	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	defer plain.Close()
	quiet := log.New(io.Discard, "", 0) // the servers' handshake-error lines are expected
	selfSigned := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	selfSigned.Config.ErrorLog = quiet
	selfSigned.StartTLS()
	defer selfSigned.Close()
	certRequired := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	certRequired.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	certRequired.Config.ErrorLog = quiet
	certRequired.StartTLS()
	defer certRequired.Close()

	client := NewClient(ssrf.Guard{AllowPrivate: true})
	defer client.CloseIdleConnections()
	// trusting sends to certRequired with its certificate trusted, so the handshake
	// gets as far as the server's alert.
	trusting := NewClient(ssrf.Guard{AllowPrivate: true})
	trusting.Transport.(*http.Transport).TLSClientConfig = certRequired.Client().Transport.(*http.Transport).TLSClientConfig
	defer trusting.CloseIdleConnections()
	guarded := NewClient(ssrf.Guard{})
	for _, tc := range []struct {
		name   string
		url    string
		client *http.Client
		want   delivery.ErrorClass
	}{
		{"connection refused", refusedURL, client, delivery.ClassConnect},
		{"no answer", "http://" + silent.Addr().String() + "/", client, delivery.ClassTimeout},
		{"https to plain http", "https://" + plain.Listener.Addr().String() + "/", client, delivery.ClassTLS},
		{"untrusted certificate", selfSigned.URL, client, delivery.ClassTLS},
		{"tls alert", certRequired.URL, trusting, delivery.ClassTLS},
		{"host does not resolve", "http://herald-test.invalid/", client, delivery.ClassDNS},
		{"blocked address", plain.URL, guarded, delivery.ClassBlocked},
	} {
		timeout := 10 * time.Second // room for a handshake on a loaded machine
		if tc.want == delivery.ClassTimeout {
			timeout = 300 * time.Millisecond
		}
		res, err := Send(context.Background(), tc.client, &Post{URL: tc.url, ID: "x"}, timeout, 1<<10)
		t.Logf("%s: %v", tc.name, res.Err)
		require.NoError(t, err, tc.name)
		require.Equal(t, KindFailed, res.Kind, tc.name)
		require.Equal(t, tc.want, res.Class, "%s: %v", tc.name, res.Err)
		require.Error(t, res.Err, tc.name)
	}
}
