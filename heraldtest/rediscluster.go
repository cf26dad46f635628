package heraldtest

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/config"
)

// clusterNodeTimeout is the test cluster's cluster-node-timeout: how long a master
// may be unreachable before its replica is promoted (promotion follows within
// about two of these).
const clusterNodeTimeout = 1500 * time.Millisecond

// RedisCluster is a Redis Cluster of its own for one test: three masters with one
// replica each, redis-server processes on loopback ports (no persistence, files in
// a temporary directory), created with `redis-cli --cluster create
// --cluster-replicas 1`. Every process is killed by PID when the test ends.
type RedisCluster struct {
	t testing.TB
	// Servers are the six nodes in the order given to redis-cli; which are masters
	// changes with failovers (Master).
	Servers []*RedisServer
}

// StartRedisCluster starts a six-node cluster and returns once every node reports
// cluster_state:ok and every replica's link to its master is up. It fails the test
// when redis-server or redis-cli is missing or the cluster does not form.
func StartRedisCluster(t testing.TB) *RedisCluster {
	t.Helper()
	dir := t.TempDir()
	c := &RedisCluster{t: t}
	var addrs []string
	for _, port := range freePorts(t, 6) {
		p := strconv.Itoa(port)
		s := startRedisServer(t, dir, port, "--port", p, "--bind", "127.0.0.1", "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes-"+p+".conf", "--cluster-node-timeout", strconv.FormatInt(clusterNodeTimeout.Milliseconds(), 10),
			"--dir", dir, "--save", "", "--appendonly", "no")
		c.Servers = append(c.Servers, s)
		addrs = append(addrs, s.Addr)
	}
	cli, err := exec.LookPath("redis-cli")
	require.NoError(t, err, "redis-cli must be on PATH for cluster tests")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput()
	require.NoError(t, err, "redis-cli --cluster create: %s", out)
	c.WaitHealthy()
	return c
}

// Addrs returns every node's address, comma-separated (HERALD_REDIS_ADDR's seeds).
func (c *RedisCluster) Addrs() string {
	var addrs []string
	for _, s := range c.Servers {
		addrs = append(addrs, s.Addr)
	}
	return strings.Join(addrs, ",")
}

// Configure points cfg at the cluster: HERALD_REDIS_MODE=cluster and every node as
// a seed.
func (c *RedisCluster) Configure(cfg *config.Config) {
	cfg.RedisMode, cfg.RedisAddr = config.RedisCluster, c.Addrs()
}

// Client returns a cluster client, closed when the test ends.
func (c *RedisCluster) Client() *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(c.Addrs(), ",")})
	c.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// alive returns the servers still running.
func (c *RedisCluster) alive() []*RedisServer {
	var out []*RedisServer
	for _, s := range c.Servers {
		select {
		case <-s.done:
		default:
			out = append(out, s)
		}
	}
	return out
}

// server returns the running server listening on addr, or nil.
func (c *RedisCluster) server(addr string) *RedisServer {
	for _, s := range c.alive() {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// Master returns the running master that serves slot, as the first live node
// answering CLUSTER SLOTS sees it; it fails the test when none does.
func (c *RedisCluster) Master(slot int) *RedisServer {
	c.t.Helper()
	if m := c.masterOf(slot); m != nil {
		return m
	}
	c.t.Fatalf("no live master serves slot %d", slot)
	return nil
}

// WaitFailover waits (up to 30 s, polling every 10 ms) until a live master other
// than old serves slot, as the first live node answering CLUSTER SLOTS sees it,
// and returns when that was first seen: the moment the cluster finished its
// failover, whatever its clients have noticed yet.
func (c *RedisCluster) WaitFailover(slot int, old *RedisServer) time.Time {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := c.masterOf(slot); m != nil && m != old {
			return time.Now()
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no replica took over slot %d within 30 s", slot)
		}
		time.Sleep(10 * time.Millisecond) // polling a server state that sends no signal
	}
}

// masterOf returns the running master that serves slot, as the first live node
// answering CLUSTER SLOTS sees it, or nil.
func (c *RedisCluster) masterOf(slot int) *RedisServer {
	ctx := context.Background()
	for _, s := range c.alive() {
		n := redis.NewClient(&redis.Options{Addr: s.Addr})
		ranges, err := n.ClusterSlots(ctx).Result() //nolint:staticcheck // slot ranges with their master, as the test needs; CLUSTER SHARDS says the same at more length
		n.Close()
		if err != nil {
			continue
		}
		for _, r := range ranges {
			if slot >= r.Start && slot <= r.End && len(r.Nodes) > 0 {
				if m := c.server(r.Nodes[0].Addr); m != nil {
					return m
				}
			}
		}
	}
	return nil
}

// Slot returns the cluster slot of a key or sharded channel name (CLUSTER KEYSLOT).
func (c *RedisCluster) Slot(key string) int {
	c.t.Helper()
	n := redis.NewClient(&redis.Options{Addr: c.alive()[0].Addr})
	defer n.Close()
	slot, err := n.ClusterKeySlot(context.Background(), key).Result()
	require.NoError(c.t, err)
	return int(slot)
}

// WaitHealthy waits (up to 30 s) until every live node reports cluster_state:ok,
// every slot is served by a live master, and every live replica's link to its
// master is up, so a master killed next has a synchronised replica.
func (c *RedisCluster) WaitHealthy() {
	c.t.Helper()
	ctx := context.Background()
	waitFor(c.t, 30*time.Second, func() bool {
		for _, s := range c.alive() {
			n := redis.NewClient(&redis.Options{Addr: s.Addr})
			info, _ := n.ClusterInfo(ctx).Result()
			role := redisInfo(ctx, n, "replication", "role")
			link := redisInfo(ctx, n, "replication", "master_link_status")
			ranges, _ := n.ClusterSlots(ctx).Result() //nolint:staticcheck // as in Master
			n.Close()
			if !strings.Contains(info, "cluster_state:ok") || (role == "slave" && link != "up") {
				return false
			}
			covered := 0
			for _, r := range ranges {
				if len(r.Nodes) == 0 || c.server(r.Nodes[0].Addr) == nil {
					return false
				}
				covered += r.End - r.Start + 1
			}
			if covered != 16384 {
				return false
			}
		}
		return true
	}, "the Redis cluster to be healthy")
}

// nodeID returns s's cluster node id (CLUSTER MYID).
func (c *RedisCluster) nodeID(s *RedisServer) string {
	c.t.Helper()
	n := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer n.Close()
	id, err := n.Do(context.Background(), "CLUSTER", "MYID").Text()
	require.NoError(c.t, err)
	return id
}

// MoveSlot migrates slot, keys and all, from its master to master to, as
// `redis-cli --cluster reshard` does: the target IMPORTING and the source
// MIGRATING it, every key moved with MIGRATE in batches, then every master told
// the slot's new owner with CLUSTER SETSLOT NODE. Clients meanwhile get ASK and
// then MOVED redirections (and TRYAGAIN for multi-key commands on a half-moved
// slot).
func (c *RedisCluster) MoveSlot(slot int, to *RedisServer) {
	c.t.Helper()
	ctx := context.Background()
	from := c.Master(slot)
	require.NotEqual(c.t, from.Addr, to.Addr, "slot %d is already on %s", slot, to.Addr)
	src, dst := from.Client(c.t), to.Client(c.t)
	srcID, dstID := c.nodeID(from), c.nodeID(to)
	require.NoError(c.t, dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	require.NoError(c.t, src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		require.NoError(c.t, err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", "127.0.0.1", to.Port, "", 0, 5000, "REPLACE", "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		require.NoError(c.t, src.Do(ctx, args...).Err())
	}
	// The target first, so the source's MOVED replies never point at a node that
	// does not yet accept the slot.
	require.NoError(c.t, dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
	require.NoError(c.t, src.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
	for _, s := range c.alive() {
		n := redis.NewClient(&redis.Options{Addr: s.Addr})
		if role := redisInfo(ctx, n, "replication", "role"); role == "master" && s != from && s != to {
			require.NoError(c.t, n.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
		}
		n.Close()
	}
}
