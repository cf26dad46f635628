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
