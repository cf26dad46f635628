package models

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPlaceQueues(t *testing.T) {
	t.Parallel()
	rw := func(id int64, weight, queues int) NodeLoad {
		return NodeLoad{ID: id, State: NodeReadWrite, Weight: weight, Queues: queues}
	}
	for _, tc := range []struct {
		name  string
		nodes []NodeLoad
		n     int
		want  []int64
	}{
		{"one node takes all", []NodeLoad{rw(1, 100, 40)}, 3, []int64{1, 1, 1}},
		{"equal weights alternate, lower id first", []NodeLoad{rw(1, 100, 0), rw(2, 100, 0)}, 4, []int64{1, 2, 1, 2}},
		{"a new node catches up first", []NodeLoad{rw(1, 100, 4), rw(2, 100, 0)}, 5, []int64{2, 2, 2, 2, 1}},
		{"weights set the shares", []NodeLoad{rw(1, 100, 0), rw(2, 300, 0)}, 8, []int64{2, 2, 1, 2, 2, 2, 1, 2}},
		{"read-only, draining and retired nodes take none", []NodeLoad{
			{ID: 1, State: NodeReadOnly, Weight: 100}, {ID: 2, State: NodeDraining, Weight: 100},
			{ID: 3, State: NodeRetired, Weight: 100}, rw(4, 1, 99)}, 2, []int64{4, 4}},
		{"no queues asked", []NodeLoad{rw(1, 100, 0)}, 0, []int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := append([]NodeLoad(nil), tc.nodes...)
			got, err := PlaceQueues(tc.nodes, tc.n)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, before, tc.nodes, "the caller's loads are not changed")
		})
	}
	_, err := PlaceQueues([]NodeLoad{{ID: 1, State: NodeReadOnly, Weight: 100}}, 1)
	require.ErrorIs(t, err, ErrNoWritableNode)
	_, err = PlaceQueues(nil, 1)
	require.ErrorIs(t, err, ErrNoWritableNode)
}

// TestPlaceQueuesShares checks the long-run shares follow the weights exactly.
func TestPlaceQueuesShares(t *testing.T) {
	t.Parallel()
	got, err := PlaceQueues([]NodeLoad{{ID: 1, State: NodeReadWrite, Weight: 1}, {ID: 2, State: NodeReadWrite, Weight: 2},
		{ID: 3, State: NodeReadWrite, Weight: 7}}, 1000)
	require.NoError(t, err)
	count := map[int64]int{}
	for _, id := range got {
		count[id]++
	}
	require.Equal(t, map[int64]int{1: 100, 2: 200, 3: 700}, count)
}
