package models_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

// TestNodeTransitions: a change between up and down is reported once, in node
// order; a node first seen down reports down (absent counts as up); unknown and
// vanished (retired) nodes report nothing; an unchanged view reports nothing.
func TestNodeTransitions(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	up := func(n int64) models.NodeHealth { return models.NodeHealth{Node: n, State: models.NodeUp, Since: t0} }
	down := func(n int64) models.NodeHealth {
		return models.NodeHealth{Node: n, State: models.NodeDown, Since: t0.Add(time.Second), Error: "connection refused"}
	}
	unknown := func(n int64) models.NodeHealth { return models.NodeHealth{Node: n, State: models.NodeUnknown} }
	for _, tc := range []struct {
		name      string
		prev, cur map[int64]models.NodeHealth
		want      []models.NodeTransition
	}{
		{"nothing changed", map[int64]models.NodeHealth{1: up(1), 3: down(3)}, map[int64]models.NodeHealth{1: up(1), 3: down(3)}, nil},
		{"first view, all up", nil, map[int64]models.NodeHealth{1: up(1), 2: up(2)}, nil},
		{"first view, one down", nil, map[int64]models.NodeHealth{1: up(1), 3: down(3)},
			[]models.NodeTransition{{Node: 3, From: models.NodeUp, To: models.NodeDown, At: t0.Add(time.Second), Error: "connection refused"}}},
		{"down then up", map[int64]models.NodeHealth{3: down(3)}, map[int64]models.NodeHealth{3: up(3)},
			[]models.NodeTransition{{Node: 3, From: models.NodeDown, To: models.NodeUp, At: t0}}},
		{"two nodes in id order", map[int64]models.NodeHealth{2: up(2), 3: up(3)}, map[int64]models.NodeHealth{3: down(3), 2: down(2)},
			[]models.NodeTransition{{Node: 2, From: models.NodeUp, To: models.NodeDown, At: t0.Add(time.Second), Error: "connection refused"},
				{Node: 3, From: models.NodeUp, To: models.NodeDown, At: t0.Add(time.Second), Error: "connection refused"}}},
		{"unknown says nothing", map[int64]models.NodeHealth{3: down(3)}, map[int64]models.NodeHealth{3: unknown(3)}, nil},
		{"retired node vanished", map[int64]models.NodeHealth{3: down(3)}, map[int64]models.NodeHealth{}, nil},
		{"unknown before counts as up", map[int64]models.NodeHealth{3: unknown(3)}, map[int64]models.NodeHealth{3: down(3)},
			[]models.NodeTransition{{Node: 3, From: models.NodeUp, To: models.NodeDown, At: t0.Add(time.Second), Error: "connection refused"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, models.NodeTransitions(tc.prev, tc.cur))
		})
	}
}
