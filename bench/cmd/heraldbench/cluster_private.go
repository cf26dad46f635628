package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/bench/internal/procstat"
)

// clusterNodeTimeout is the private cluster's cluster-node-timeout: how long a master
// may be unreachable before the others mark it failed and its replica stands for
// election (promotion follows within about 1–2 more seconds). A production cluster
// sets its own (Redis' default is 15 s); takeover grows with it.
const clusterNodeTimeout = 1500 * time.Millisecond

// clusterNode is one redis-server of the private cluster.
type clusterNode struct {
	addr   string
	log    string // its log file
	cmd    *exec.Cmd
	exited chan struct{}
	rdb    *redis.Client
}

func (n *clusterNode) alive() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// privateCluster is a Redis Cluster of three masters with one replica each,
// redis-server processes on free loopback ports (no persistence), created with
// `redis-cli --cluster create --cluster-replicas 1`. stop ends every node by pid.
type privateCluster struct {
	dir   string
	nodes []*clusterNode
}

// startPrivateCluster starts the six nodes, creates the cluster and waits until
// every node reports cluster_state:ok and every replica's link is up. It fails
// (and stops what it started) when redis-server has no cluster support, redis-cli
// is missing or the cluster does not form within a minute.
func startPrivateCluster(ctx context.Context) (_ *privateCluster, err error) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("redis-cli not found: %w", err)
	}
	dir, err := os.MkdirTemp("", "heraldbench-cluster-")
	if err != nil {
		return nil, err
	}
	c := &privateCluster{dir: dir}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	var addrs []string
	for i := range 6 {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		n := &clusterNode{addr: addr, log: filepath.Join(dir, fmt.Sprintf("redis-%d.log", i))}
		n.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes-"+port+".conf", "--cluster-node-timeout", fmt.Sprint(clusterNodeTimeout.Milliseconds()),
			"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", n.log)
		if n.exited, err = startDetached(n.cmd); err != nil {
			return nil, fmt.Errorf("start redis-server: %w", err)
		}
		n.rdb = redis.NewClient(&redis.Options{Addr: addr})
		c.nodes = append(c.nodes, n)
		addrs = append(addrs, addr)
	}
	for _, n := range c.nodes {
		if err := waitPing(ctx, n, 30*time.Second); err != nil {
			return nil, err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, cli, append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w: %s", err, tail(string(out), 400))
	}
	if err := c.waitHealthy(ctx, time.Minute); err != nil {
		return nil, err
	}
	return c, nil
}

// waitPing waits until n answers PING; a redis-server without cluster support
// exits at once on --cluster-enabled, which ends the wait with its log.
func waitPing(ctx context.Context, n *clusterNode, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	for n.rdb.Ping(ctx).Err() != nil {
		select {
		case <-n.exited:
			return fmt.Errorf("redis-server %s exited (no cluster support?): %s", n.addr, tail(readFile(n.log), 400))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(end) {
			return fmt.Errorf("redis-server %s not answering after %s", n.addr, timeout)
		}
	}
	return nil
}

// waitHealthy waits until every live node reports cluster_state:ok and every live
// replica's link to its master is up.
func (c *privateCluster) waitHealthy(ctx context.Context, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	for {
		ok := true
		for _, n := range c.live() {
			info, err := n.rdb.ClusterInfo(ctx).Result()
			repl, _ := n.rdb.Info(ctx, "replication").Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") ||
				(strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up")) {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("redis cluster not healthy after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// live returns the nodes still running.
func (c *privateCluster) live() []*clusterNode {
	var out []*clusterNode
	for _, n := range c.nodes {
		if n.alive() {
			out = append(out, n)
		}
	}
	return out
}

// seeds returns every node's address, comma-separated (HERALD_REDIS_ADDR).
func (c *privateCluster) seeds() string {
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, n.addr)
	}
	return strings.Join(addrs, ",")
}

// masters returns the addresses of the masters serving slots, as the first live
// node answering CLUSTER SLOTS sees them, with the first slot of each.
func (c *privateCluster) masters(ctx context.Context) (map[string]int, error) {
	var last error
	for _, n := range c.live() {
		ranges, err := n.rdb.ClusterSlots(ctx).Result() //nolint:staticcheck // slot ranges with their master, as the benchmark needs
		if err != nil {
			last = err
			continue
		}
		out := map[string]int{}
		for _, r := range ranges {
			if len(r.Nodes) > 0 {
				if _, seen := out[r.Nodes[0].Addr]; !seen {
					out[r.Nodes[0].Addr] = r.Start
				}
			}
		}
		return out, nil
	}
	return nil, errors.Join(errors.New("no live node answers CLUSTER SLOTS"), last)
}

// node returns the node listening on addr, or nil.
func (c *privateCluster) node(addr string) *clusterNode {
	for _, n := range c.nodes {
		if n.addr == addr {
			return n
		}
	}
	return nil
}

// commandstats reads INFO commandstats on every live node: node address → command
// → calls (commands run inside Lua scripts included).
func (c *privateCluster) commandstats(ctx context.Context) (map[string]map[string]int64, error) {
	out := map[string]map[string]int64{}
	for _, n := range c.live() {
		info, err := n.rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			return nil, fmt.Errorf("INFO commandstats on %s: %w", n.addr, err)
		}
		out[n.addr] = parseCommandstats(info)
	}
	return out, nil
}

// cpu returns the CPU time every node has used, summed; -1 if a live node's is
// unknown.
func (c *privateCluster) cpu() time.Duration {
	var sum time.Duration
	for _, n := range c.nodes {
		if n.cmd.Process == nil {
			continue
		}
		d, err := procstat.CPU(n.cmd.Process.Pid)
		if err != nil {
			if n.alive() {
				return -1
			}
			continue // a killed node's CPU is gone with it
		}
		sum += d
	}
	return sum
}

// stop ends every node by pid (SIGTERM, SIGKILL after 10 s) and removes the
// directory. It is safe on a partly started value.
func (c *privateCluster) stop() {
	for _, n := range c.nodes {
		if n.rdb != nil {
			_ = n.rdb.Close()
		}
		if n.cmd == nil || n.cmd.Process == nil || n.exited == nil {
			continue
		}
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.exited:
		case <-time.After(10 * time.Second):
			_ = n.cmd.Process.Kill()
			<-n.exited
		}
	}
	_ = os.RemoveAll(c.dir)
}

// parseCommandstats reads INFO commandstats: command → calls.
func parseCommandstats(info string) map[string]int64 {
	out := map[string]int64{}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
}

// keySlot returns the cluster slot of key (CLUSTER KEYSLOT on a live node).
func (c *privateCluster) keySlot(ctx context.Context, key string) (int, error) {
	for _, n := range c.live() {
		slot, err := n.rdb.ClusterKeySlot(ctx, key).Result()
		if err == nil {
			return int(slot), nil
		}
	}
	return 0, errors.New("no live node answers CLUSTER KEYSLOT")
}

// serves reports whether the master at addr serves slot, as the first live node
// answering CLUSTER SLOTS sees it.
func (c *privateCluster) serves(ctx context.Context, addr string, slot int) (bool, error) {
	for _, n := range c.live() {
		ranges, err := n.rdb.ClusterSlots(ctx).Result() //nolint:staticcheck // slot ranges with their master
		if err != nil {
			continue
		}
		for _, r := range ranges {
			if slot >= r.Start && slot <= r.End && len(r.Nodes) > 0 {
				return r.Nodes[0].Addr == addr, nil
			}
		}
		return false, nil
	}
	return false, errors.New("no live node answers CLUSTER SLOTS")
}
