package api_test

import (
	"encoding/json"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestNodeDSNOptionsRefused registers nodes whose DSNs set driver options that let a
// hostile server read Herald's files or take a password in clear: each is refused
// with 422 validation on /dsn naming the option, before any connection is made (the
// "server" behind the DSN never sees one), and nothing is stored.
func TestNodeDSNOptionsRefused(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	var dialled atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	base := "herald:pw@tcp(" + ln.Addr().String() + ")/herald_data?"
	for _, opt := range []string{"allowAllFiles=true", "allowCleartextPasswords=true", "allowOldPasswords=true", "multiStatements=true", "local_infile=1"} {
		status, body, _ := h.Do("POST", "/api/v1/nodes", h.Token(), map[string]any{"name": "hostile", "dsn": base + "tls=false&" + opt})
		require.Equal(t, 422, status, string(body))
		var p struct {
			Type   string
			Errors []struct{ Pointer, Detail string }
		}
		require.NoError(t, json.Unmarshal(body, &p))
		require.True(t, strings.HasSuffix(p.Type, "/validation"), p.Type)
		require.Len(t, p.Errors, 1)
		require.Equal(t, "/dsn", p.Errors[0].Pointer)
		require.Contains(t, p.Errors[0].Detail, strings.SplitN(opt, "=", 2)[0])
	}
	require.Zero(t, dialled.Load(), "a refused DSN is never dialled")
	status, body, _ := h.Do("GET", "/api/v1/nodes", h.Token(), nil)
	require.Equal(t, 200, status)
	require.NotContains(t, string(body), "hostile")
}
