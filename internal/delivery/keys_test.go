package delivery

import (
	"path"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeys pins every name: a change here moves live installations' keys and
// strands their reports, heartbeats and asynq tasks.
func TestKeys(t *testing.T) {
	t.Parallel()
	k := Keys{Namespace: "herald"}
	for _, tc := range []struct{ got, want string }{
		{k.Reports("host-1a2b"), "herald:reportlog:host-1a2b"},
		{k.Heartbeat("host-1a2b", "1:2:3:10-20:g0"), "herald:job:1:2:3:10-20:g0"},
		{k.Fence(7), "herald:fence:7"},
		{k.FenceChannel(), "herald:fence"},
		{k.AsynqQueue(), "herald-deliver"},
		{k.NotifyChannel(), "herald:notify"},
		{k.JobsChannel(), "herald:jobs"},
		{k.Workers(), "herald:workers"},
		{k.WorkerJobs("w1a2b"), "herald:wjobs:w1a2b"},
	} {
		require.Equal(t, tc.want, tc.got)
	}
	require.Equal(t, []string{"herald:*", "asynq:{herald-deliver}*"}, k.Patterns())
	require.Equal(t, []string{`a\*b:*`, `asynq:{a\*b-deliver}*`}, Keys{Namespace: "a*b"}.Patterns())
}

// TestKeysHashTags pins the cluster names: every key carries one hash tag, a
// group's by group and a dispatcher's by dispatcher, and the key parsers read
// both forms back.
func TestKeysHashTags(t *testing.T) {
	t.Parallel()
	k := Keys{Namespace: "herald", HashTags: true}
	for _, tc := range []struct{ got, want string }{
		{k.Reports("host-1a2b"), "herald:reportlog:{dhost-1a2b}"},
		{k.Heartbeat("host-1a2b", "1:2:3:10-20:g0"), "herald:job:{dhost-1a2b}:1:2:3:10-20:g0"},
		{k.Fence(7), "herald:fence:{g7}"},
		{k.AsynqQueue(), "herald-deliver"},
		{k.NotifyChannel(), "herald:notify"},
		{k.JobsChannel(), "herald:jobs"},
		{k.FenceChannel(), "herald:fence"},
		{k.Workers(), "herald:workers:{wherald}"},
		{k.WorkerJobs("w1a2b"), "herald:wjobs:{ww1a2b}"},
	} {
		require.Equal(t, tc.want, tc.got)
	}
	for _, keys := range []Keys{{Namespace: "herald"}, k} {
		owner, ok := keys.ReportsOwner(keys.Reports("host-1a2b"))
		require.True(t, ok)
		require.Equal(t, "host-1a2b", owner)
		g, ok := keys.FenceGroup(keys.Fence(42))
		require.True(t, ok)
		require.Equal(t, int64(42), g)
		_, ok = keys.ReportsOwner(keys.Fence(42))
		require.False(t, ok)
		_, ok = keys.FenceGroup(keys.Reports("x"))
		require.False(t, ok)
		require.Equal(t, "herald:reportlog:*", keys.ReportsPattern())
		require.Equal(t, "herald:fence:*", keys.FencePattern())
		j := Job{Group: 1, Queue: 2, Version: 3, Offsets: []Range{{10, 20}}}
		for _, tc := range []struct {
			owner        string
			group, queue int64
			match        bool
		}{{"host-1a2b", 1, 2, true}, {"host-1a2b", 1, 3, false}, {"host-1a2b", 12, 2, false}, {"other", 1, 2, !keys.HashTags}} {
			ok, err := path.Match(keys.HeartbeatPattern(tc.owner, tc.group, tc.queue), keys.Heartbeat("host-1a2b", j.TaskID()))
			require.NoError(t, err)
			require.Equal(t, tc.match, ok, "%+v with HashTags %v", tc, keys.HashTags)
		}
	}
	_, ok := k.FenceGroup("herald:fence:42")
	require.False(t, ok, "an untagged name is not a cluster name")
}
