package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

func TestExhaustedHeads(t *testing.T) {
	t.Parallel()
	m := func(key string, off int64) models.Message { return models.Message{Key: key, Offset: off} }
	offs := func(ms []models.Message) []int64 {
		out := []int64{}
		for _, x := range ms {
			out = append(out, x.Offset)
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		failed      []models.Message
		byKey       bool
		heads, rest []int64
	}{
		{"by queue: the first failed message only", []models.Message{m("a", 1), m("b", 2), m("a", 3)}, false, []int64{1}, []int64{2, 3}},
		{"by key: each key's first", []models.Message{m("a", 1), m("a", 2), m("b", 3), m("b", 4)}, true, []int64{1, 3}, []int64{2, 4}},
		{"by key: one key", []models.Message{m("a", 5)}, true, []int64{5}, []int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			heads, rest := exhaustedHeads(tc.failed, tc.byKey)
			require.Equal(t, tc.heads, offs(heads))
			require.Equal(t, tc.rest, offs(rest))
		})
	}
}
