package bus

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRoomsFor: a worker's room is its share of slots among the live dispatchers
// (at least 1) less the jobs it holds; lapsed, refused and draining workers take
// none; the most room comes first.
func TestRoomsFor(t *testing.T) {
	t.Parallel()
	holding := func(n int) map[string]struct{} {
		m := map[string]struct{}{}
		for range n {
			m[strconv.Itoa(len(m))] = struct{}{}
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		views       []*workerView
		dispatchers int
		want        map[string]int // id → free room
		order       []string
	}{
		{name: "alone takes every slot", dispatchers: 1,
			views: []*workerView{{id: "a", concurrency: 64, seq: 1}},
			order: []string{"a"}, want: map[string]int{"a": 64}},
		{name: "shared among dispatchers, held counted", dispatchers: 4,
			views: []*workerView{{id: "a", concurrency: 64, seq: 1, held: holding(10)}, {id: "b", concurrency: 64, seq: 1, held: holding(2)}},
			order: []string{"b", "a"}, want: map[string]int{"a": 6, "b": 14}},
		{name: "at least one slot per dispatcher", dispatchers: 8,
			views: []*workerView{{id: "a", concurrency: 2, seq: 1}},
			order: []string{"a"}, want: map[string]int{"a": 1}},
		{name: "full, lapsed, refused and draining take none", dispatchers: 1,
			views: []*workerView{{id: "full", concurrency: 2, seq: 1, held: holding(2)}, {id: "lapsed", concurrency: 8, seq: 3, lapsed: true},
				{id: "refused", concurrency: 8, seq: 5, refusedSeq: 5}, {id: "draining", concurrency: 0, seq: 1},
				{id: "back", concurrency: 8, seq: 6, refusedSeq: 5}},
			order: []string{"back"}, want: map[string]int{"back": 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rooms := roomsFor(tc.views, tc.dispatchers)
			var order []string
			for _, r := range rooms {
				order = append(order, r.v.id)
				require.Equal(t, tc.want[r.v.id], r.free, r.v.id)
			}
			require.Equal(t, tc.order, order)
		})
	}
}
