package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/signing"
)

// TestReceiverConcurrentDeliveries runs the built receiver (with the race detector
// when the test has it) and sends it 16 signed batch deliveries at once, as a group
// with the default max_in_flight does, each batch sharing message ids with the
// others (redeliveries). Every POST is answered 204 or 200 with only ids another
// POST was processing at that moment, the process stays up, and each message is
// logged (processed) exactly once.
func TestReceiverConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "receiver")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // the receiver takes the port it was just given

	secret := signing.NewSecret()
	cmd := exec.Command(bin, addr)
	cmd.Env = append(os.Environ(), "HERALD_SIGNING_SECRET="+secret)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	logs := make(chan string, 1024)
	go func() {
		defer close(logs)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := <-logs
	require.Contains(t, ready, "receiving on", "the receiver's first log line says it listens")
	waitListening(t, addr)

	const posts, perBatch, distinct = 16, 8, 64
	signer, err := signing.NewSigner(secret)
	require.NoError(t, err)
	start := make(chan struct{})
	var wg sync.WaitGroup
	type answer struct {
		status int
		failed []string
		err    error
	}
	answers := make([]answer, posts)
	for i := range posts {
		wg.Go(func() {
			var msgs []map[string]any
			for j := range perBatch {
				msgs = append(msgs, map[string]any{"id": fmt.Sprintf("msg_1_%d", (i*perBatch/2+j)%distinct+1), "topic": "orders",
					"attempt": 1, "body": map[string]int{"n": j}})
			}
			body, _ := json.Marshal(map[string]any{"messages": msgs})
			req, _ := http.NewRequest("POST", "http://"+addr+"/webhook", bytes.NewReader(body))
			id, ts := fmt.Sprintf("bat_%d", i), time.Now().Unix()
			req.Header.Set("webhook-id", id)
			req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
			req.Header.Set("webhook-signature", signer.Sign(id, ts, body))
			req.Header.Set("Content-Type", "application/json")
			<-start
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers[i].err = err
				return
			}
			defer resp.Body.Close()
			answers[i].status = resp.StatusCode
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode == http.StatusOK {
				var pf struct{ Failed []string }
				answers[i].err = json.Unmarshal(b, &pf)
				answers[i].failed = pf.Failed
			}
		})
	}
	close(start)
	wg.Wait()
	retry := map[string]bool{}
	for i, a := range answers {
		require.NoError(t, a.err, "POST %d", i)
		require.Contains(t, []int{http.StatusNoContent, http.StatusOK}, a.status, "POST %d", i)
		for _, id := range a.failed {
			retry[id] = true
		}
	}
	// Herald would send the ids answered as failed again: do so, one at a time.
	for id := range retry {
		body := []byte(`{"n":1}`)
		req, _ := http.NewRequest("POST", "http://"+addr+"/webhook", bytes.NewReader(body))
		ts := time.Now().Unix()
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		req.Header.Set("webhook-signature", signer.Sign(id, ts, body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode, id)
	}

	// Stop the receiver and read every line it logged: one per processed message.
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	processed := map[string]int{}
	for line := range logs {
		require.NotContains(t, line, "DATA RACE")
		require.NotContains(t, line, "fatal error")
		if f := strings.Fields(line); len(f) >= 3 && strings.HasPrefix(f[2], "msg_") {
			processed[f[2]]++
		}
	}
	require.Len(t, processed, distinct, "every message processed")
	for id, n := range processed {
		require.Equal(t, 1, n, "%s processed once", id)
	}
}

// waitListening returns once addr accepts a connection (the receiver logs before
// it listens).
func waitListening(t *testing.T, addr string) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
}
