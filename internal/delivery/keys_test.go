package delivery

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeys pins every name: a change here moves live installations' keys and
// strands their reports, heartbeats and asynq tasks.
func TestKeys(t *testing.T) {
	t.Parallel()
	k := Keys{Namespace: "herald"}
	for _, tc := range []struct{ got, want string }{
		{k.Reports("host-1a2b"), "herald:reports:host-1a2b"},
		{k.Heartbeat("1:2:3:10-20:g0"), "herald:job:1:2:3:10-20:g0"},
		{k.AsynqQueue(), "herald-deliver"},
		{k.NotifyChannel(), "herald:notify"},
		{k.JobsChannel(), "herald:jobs"},
	} {
		require.Equal(t, tc.want, tc.got)
	}
	require.Equal(t, []string{"herald:*", "asynq:{herald-deliver}*"}, k.Patterns())
	require.Equal(t, []string{`a\*b:*`, `asynq:{a\*b-deliver}*`}, Keys{Namespace: "a*b"}.Patterns())
}
