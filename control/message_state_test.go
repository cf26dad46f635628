package control_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// TestMessageState derives a message's badge from its cursor: the committed offset,
// the ids the commit lists as undone, and an ordered queue's block.
func TestMessageState(t *testing.T) {
	t.Parallel()
	cur := control.CursorPosition{CursorID: 1, Offset: 100, Undone: []models.Hole{{From: 40, To: 60}, {From: 90, To: 90}}}
	block := models.OrderedBlock{QueueID: 1, Offset: 40, Count: 2}
	for _, tc := range []struct {
		name       string
		cur        control.CursorPosition
		blocked    bool
		offset     int64
		subscribed bool
		want       string
	}{
		{"passed and not listed", cur, false, 39, true, control.StateDelivered},
		{"passed but listed", cur, false, 50, true, control.StatePending},
		{"listed single id", cur, false, 90, true, control.StatePending},
		{"after the offset", cur, false, 101, true, control.StatePending},
		{"no cursor", control.CursorPosition{}, false, 1, true, control.StatePending},
		{"tag not subscribed", cur, false, 101, false, control.StateFiltered},
		{"blocked head", cur, true, 41, true, control.StateBlocked},
		{"behind the block", cur, true, 42, true, control.StatePending},
		{"before the block", cur, true, 30, true, control.StateDelivered},
	} {
		require.Equal(t, tc.want, control.MessageState(tc.cur, block, tc.blocked, tc.offset, tc.subscribed), tc.name)
	}
}
