package delivery

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRanges(t *testing.T) {
	t.Parallel()
	rs := Ranges([]int64{5, 3, 4, 9, 10, 3, 12})
	require.Equal(t, []Range{{3, 5}, {9, 10}, {12, 12}}, rs)
	require.Equal(t, []int64{3, 4, 5, 9, 10, 12}, Expand(rs))
	require.Empty(t, Ranges(nil))
}

func TestJobRoundTrip(t *testing.T) {
	t.Parallel()
	j := Job{Group: 1, Queue: 2, Version: 3, Generation: 4, Owner: "d1", Offsets: []Range{{10, 20}, {25, 25}}, Parallelism: 2, Attempt: 1}
	require.Equal(t, "1:2:3:10-25:g4", j.TaskID())
	tk, err := NewDeliver(j)
	require.NoError(t, err)
	got, err := ParseDeliver(tk)
	require.NoError(t, err)
	require.Equal(t, j, got)
	j.Offsets = nil
	tk, _ = NewDeliver(j)
	_, err = ParseDeliver(tk)
	require.Error(t, err)
}
