package redisconn

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// newClusterClient returns a cluster client that starts a reload of its slot map
// (ClusterClient.ReloadState: one CLUSTER SLOTS in the background, at most one
// every 200 ms) as soon as a node cannot be reached: a refused or failed dial, or
// a connection that broke under a command. go-redis itself reloads on MOVED and on
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

func (h reloadOnFailure) check(err error) {
	if unreachable(err) {
		h.cluster.ReloadState(context.Background())
	}
}

// DialHook reloads after a failed dial.
func (h reloadOnFailure) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		h.check(err)
		return conn, err
	}
}

// ProcessHook reloads after a command failed for want of the node.
func (h reloadOnFailure) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(err)
		return err
	}
}

// ProcessPipelineHook reloads after a pipeline failed for want of the node.
func (h reloadOnFailure) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(err)
		return err
	}
}
