// Package e2e holds Herald's black-box tests: every role in process on random
// loopback ports, a real MariaDB database and Redis namespace per test, and loopback
// receivers that verify signatures with the official Standard Webhooks library.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// heraldBin is the herald binary built once for tests that run roles as real
// processes (to kill them).
var heraldBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herald-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	heraldBin = filepath.Join(dir, "herald")
	build := exec.Command("go", "build", "-o", heraldBin, "../../cmd/herald")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build herald:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixture is one real GitHub webhook payload from testdata.
type fixture struct {
	File  string
	Event string
	Body  []byte // the JSON value as published: the file without surrounding whitespace
}

func loadFixtures(t *testing.T) []fixture {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "github-webhooks")
	index, err := os.ReadFile(filepath.Join(dir, "index.tsv"))
	require.NoError(t, err)
	var out []fixture
	for _, line := range strings.Split(strings.TrimSpace(string(index)), "\n")[1:] {
		cols := strings.Split(line, "\t")
		b, err := os.ReadFile(filepath.Join(dir, cols[0]))
		require.NoError(t, err)
		out = append(out, fixture{File: cols[0], Event: cols[1], Body: bytes.TrimSpace(b)})
	}
	require.GreaterOrEqual(t, len(out), 50)
	return out
}

// rawPublish builds a publish body that embeds each payload's bytes unchanged (a
// json.Marshal would compact them).
func rawPublish(bodies [][]byte, tags []string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"messages":[`)
	for i, body := range bodies {
		if i > 0 {
			b.WriteByte(',')
		}
		tag, _ := json.Marshal(tags[i])
		b.WriteString(`{"tag":`)
		b.Write(tag)
		b.WriteString(`,"body":`)
		b.Write(body)
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func published(t *testing.T, body []byte) []heraldtest.Published {
	t.Helper()
	var out struct{ Messages []heraldtest.Published }
	require.NoError(t, json.Unmarshal(body, &out), string(body))
	return out.Messages
}
