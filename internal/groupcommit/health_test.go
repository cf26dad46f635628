package groupcommit

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

// TestNodeHealthReport: a node is marked down by a flush error of its own (a
// server that does not answer), not by the request's fault nor by a move's seal,
// and a success clears the mark.
func TestNodeHealthReport(t *testing.T) {
	var h nodeHealth
	for _, err := range []error{
		fmt.Errorf("insert: %w", models.ErrConflict),
		fmt.Errorf("insert: %w", models.ErrInvalid),
		fmt.Errorf("insert into queue 7: %w: %w", models.ErrQueueSealed, errors.New("Error 1644: herald: queue sealed 7")),
	} {
		h.report(2, err)
		require.False(t, h.down(2), "%v", err)
	}
	h.report(2, errors.New("dial tcp: connection refused"))
	require.True(t, h.down(2))
	require.False(t, h.down(3))
	h.report(0, errors.New("several nodes: not recorded"))
	require.False(t, h.down(0))
	h.report(2, nil)
	require.False(t, h.down(2))
}
