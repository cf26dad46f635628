package api

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkDecodePublish measures decoding a publish envelope: 100 × 1 KiB bodies,
// and one ~8 KB GitHub payload. Compare builds with and without GOEXPERIMENT=jsonv2.
func BenchmarkDecodePublish(b *testing.B) {
	pad := `{"pad":"` + strings.Repeat("x", 1010) + `"}`
	var sb strings.Builder
	sb.WriteString(`{"messages":[`)
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"tag":"t","body":` + pad + `}`)
	}
	sb.WriteString(`]}`)
	github, err := os.ReadFile("../testdata/github-webhooks/push.1.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{{"100x1KiB", []byte(sb.String())}, {"github-push", []byte(`{"messages":[{"tag":"push","body":` + string(github) + `}]}`)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			for b.Loop() {
				var req publishRequest
				if err := decodeStrict(tc.body, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
