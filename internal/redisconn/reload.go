package redisconn

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// newClusterClient returns a cluster client that starts a reload of its slot map
// (ClusterClient.ReloadState: one CLUSTER SLOTS in the background, at most one
// every 200 ms) as soon as a command fails because its node cannot be reached: a
// refused dial, or a connection that broke under it. go-redis itself reloads on MOVED and on
// its periodic tick (clusterStateReload) but not on a dead master, whose slots
// keep pointing at it until a reload sees the promoted replica. Reloading on the
// failure itself means the reload after the promotion comes within about 200 ms
// of it instead of up to a tick later (TestClusterMasterKilled; the bench's
// cluster scenario reports the difference).
func newClusterClient(opt *redis.ClusterOptions) *redis.ClusterClient {
	c := redis.NewClusterClient(opt)
	c.OnNewNode(func(node *redis.Client) { node.AddHook(reloadOnFailure{cluster: c}) })
	return c
}

// reloadOnFailure is the go-redis hook of newClusterClient, added to every node's
// client.
type reloadOnFailure struct{ cluster *redis.ClusterClient }

// unreachable reports whether err says the node could not be reached, rather
// than an answer from Redis (redis.Nil, an error reply such as MOVED) or the
// caller giving up (a context's end).
func unreachable(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		return false
	}
	return !errors.Is(err, redis.ErrClosed)
}

func (h reloadOnFailure) check(cmd redis.Cmder, err error) {
	if unreachable(err) && (cmd == nil || cmd.Name() != "cluster") { // not the reload's own CLUSTER SLOTS
		h.cluster.ReloadState(context.Background())
	}
}

// DialHook adds nothing: a failed dial surfaces as the failed command's error,
// while the dials of the reload itself (to a dead seed node) must not start
// another.
func (h reloadOnFailure) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook reloads after a command failed for want of the node.
func (h reloadOnFailure) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(cmd, err)
		return err
	}
}

// ProcessPipelineHook reloads after a pipeline failed for want of the node.
func (h reloadOnFailure) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(nil, err)
		return err
	}
}
