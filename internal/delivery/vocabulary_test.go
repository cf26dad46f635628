package delivery

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVocabularyWireValues pins every error class and return reason: classes are
// stored in delivery_attempts and shown by the API and metrics, reasons cross
// between workers and dispatchers of two releases during an upgrade.
func TestVocabularyWireValues(t *testing.T) {
	t.Parallel()
	classes := []string{"dns", "connect", "tls", "timeout", "reset", "redirect", "blocked_destination", "http_status",
		"partial_malformed", "partial_failure", "other", "no_report"}
	var got []string
	for _, c := range ErrorClasses() {
		require.LessOrEqual(t, len(c), 32, "delivery_attempts.error_class is VARCHAR(32)")
		got = append(got, string(c))
	}
	require.Equal(t, classes, got)
	reasons := []string{"shutdown", "load_failed", "record_failed", "paused", "probe", "throttled", "held", "gone", "fenced", "blocked"}
	got = nil
	for _, r := range Reasons() {
		got = append(got, string(r))
	}
	require.Equal(t, reasons, got)
}

// TestReasonBackoff: the causes the worker or its store produced back off and count
// a return; group state, fences and ordered blocks hold the others.
func TestReasonBackoff(t *testing.T) {
	t.Parallel()
	want := map[Reason]bool{ReasonShutdown: true, ReasonLoadFailed: true, ReasonRecordFailed: true}
	for _, r := range Reasons() {
		require.Equal(t, want[r], r.Backoff(), r)
	}
}
