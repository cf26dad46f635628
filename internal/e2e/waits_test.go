package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// waitRetriesDue waits until the test's database holds n retry rows and every one is
// due by the database clock, the clock a retry claim compares due_at with.
func waitRetriesDue(t *testing.T, h *heraldtest.Herald, n int) {
	t.Helper()
	var rows, notDue int
	require.Eventually(t, func() bool {
		err := h.Store.DB().QueryRowContext(t.Context(),
			"SELECT COUNT(*), COALESCE(SUM(due_at > NOW(3)), 0) FROM retry_messages").Scan(&rows, &notDue)
		return err == nil && rows == n && notDue == 0
	}, 15*time.Second, 20*time.Millisecond, "retry rows: %d, not yet due: %d, want %d all due", rows, notDue, n)
}
