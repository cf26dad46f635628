package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// outMsg is one message to publish: a JSON value, an optional tag and an optional
// key (per-key placement and order).
type outMsg struct {
	body      []byte
	tag       string
	key       string
	deliverAt string // RFC 3339: a delayed message (scenario t)
}

// padBody returns the JSON value {"pad":"<seq>xxxx…"} of exactly size bytes (size ≥ 32).
func padBody(seq, size int) []byte {
	b := make([]byte, 0, size)
	b = append(b, `{"pad":"`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, '-')
	for len(b) < size-2 {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}

// fixture is one GitHub webhook payload from the fixtures directory.
type fixture struct {
	file  string
	event string
	body  []byte // the file's JSON value, surrounding whitespace trimmed
}

// loadFixtures reads index.tsv (file, github_event, …) and each file it lists.
func loadFixtures(dir string) ([]fixture, error) {
	f, err := os.Open(filepath.Join(dir, "index.tsv"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []fixture
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); line++ {
		cols := strings.Split(sc.Text(), "\t")
		if line == 0 || len(cols) < 2 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, cols[0]))
		if err != nil {
			return nil, err
		}
		b = bytes.TrimSpace(b)
		if !json.Valid(b) {
			return nil, fmt.Errorf("fixture %s is not valid JSON", cols[0])
		}
		out = append(out, fixture{file: cols[0], event: cols[1], body: b})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fixtures listed in %s/index.tsv", dir)
	}
	return out, nil
}

// envelope builds a publish request body {"messages":[{"body":…,"tag":…},…]},
// embedding each body verbatim.
func envelope(msgs []outMsg) []byte {
	n := 16
	for _, m := range msgs {
		n += len(m.body) + len(m.tag) + len(m.key) + 32
	}
	b := make([]byte, 0, n)
	b = append(b, `{"messages":[`...)
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"body":`...)
		b = append(b, m.body...)
		if m.tag != "" {
			tag, _ := json.Marshal(m.tag)
			b = append(b, `,"tag":`...)
			b = append(b, tag...)
		}
		if m.key != "" {
			key, _ := json.Marshal(m.key)
			b = append(b, `,"key":`...)
			b = append(b, key...)
		}
		if m.deliverAt != "" {
			b = append(b, `,"deliver_at":"`...)
			b = append(b, m.deliverAt...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func hashOf(b []byte) [sha256.Size]byte { return sha256.Sum256(b) }
