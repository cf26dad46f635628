package fence

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		group  int64
		want   map[int64]int64
		status int64
		ok     bool
	}{
		{"7 3:12 4:9", 7, map[int64]int64{3: 12, 4: 9}, -1, true},
		{"7 status:21", 7, map[int64]int64{}, 21, true},
		{"7 status:x", 0, nil, 0, false},
		{"7", 0, nil, 0, false},
		{"x 3:1", 0, nil, 0, false},
		{"7 3-1", 0, nil, 0, false},
		{"7 3:y", 0, nil, 0, false},
	} {
		g, vs, status, ok := parse(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		if ok {
			require.Equal(t, tc.group, g)
			require.Equal(t, tc.want, vs)
			require.Equal(t, tc.status, status)
		}
	}
}
