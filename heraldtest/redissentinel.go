package heraldtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/config"
)

// SentinelMasterName is the master set name the test sentinels monitor.
const SentinelMasterName = "herald"

// sentinelDownAfter is the test sentinels' down-after-milliseconds: how long the
// master may be unreachable before a failover starts.
const sentinelDownAfter = 1000 * time.Millisecond

// RedisSentinel is a Sentinel deployment of its own for one test: a master, one
// replica and three sentinels (quorum 2), redis-server processes on loopback
// ports, killed by PID when the test ends.
type RedisSentinel struct {
	t testing.TB
	// Master and Replica are the data nodes as started; after a failover the
	// replica is the master.
	Master, Replica *RedisServer
	// Sentinels are the three sentinels.
	Sentinels []*RedisServer
}

// StartRedisSentinel starts the deployment and returns once every sentinel sees
// the replica (link up) and the two other sentinels, so a failover can be elected.
func StartRedisSentinel(t testing.TB) *RedisSentinel {
	t.Helper()
	dir := t.TempDir()
	ports := freePorts(t, 5)
	s := &RedisSentinel{t: t}
	data := func(port int, extra ...string) *RedisServer {
		p := strconv.Itoa(port)
		return startRedisServer(t, dir, port, append([]string{"--port", p, "--bind", "127.0.0.1", "--dir", dir,
			"--dbfilename", "dump-" + p + ".rdb", "--save", "", "--appendonly", "no"}, extra...)...)
	}
	s.Master = data(ports[0])
	s.Replica = data(ports[1], "--replicaof", "127.0.0.1", strconv.Itoa(ports[0]))
	for _, port := range ports[2:] {
		p := strconv.Itoa(port)
		conf := filepath.Join(dir, "sentinel-"+p+".conf")
		require.NoError(t, os.WriteFile(conf, []byte("port "+p+"\nbind 127.0.0.1\n"+
			"sentinel monitor "+SentinelMasterName+" 127.0.0.1 "+strconv.Itoa(ports[0])+" 2\n"+
			"sentinel down-after-milliseconds "+SentinelMasterName+" "+strconv.FormatInt(sentinelDownAfter.Milliseconds(), 10)+"\n"+
			"sentinel failover-timeout "+SentinelMasterName+" 10000\n"), 0o600))
		s.Sentinels = append(s.Sentinels, startRedisServer(t, dir, port, conf, "--sentinel"))
	}
	ctx := context.Background()
	replica := s.Replica.Client(t)
	waitFor(t, 30*time.Second, func() bool {
		if redisInfo(ctx, replica, "replication", "master_link_status") != "up" {
			return false
		}
		for _, sn := range s.Sentinels {
			c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr})
			peers, err1 := c.Sentinels(ctx, SentinelMasterName).Result()
			replicas, err2 := c.Replicas(ctx, SentinelMasterName).Result()
			_ = c.Close()
			if err1 != nil || err2 != nil || len(peers) != 2 || len(replicas) != 1 {
				return false
			}
		}
		return true
	}, "the sentinels to see the replica and each other")
	return s
}

// Addrs returns the sentinels' addresses, comma-separated (HERALD_REDIS_ADDR).
func (s *RedisSentinel) Addrs() string {
	var addrs []string
	for _, sn := range s.Sentinels {
		addrs = append(addrs, sn.Addr)
	}
	return strings.Join(addrs, ",")
}

// Configure points cfg at the deployment: HERALD_REDIS_MODE=sentinel, the
// sentinels' addresses and the master set's name.
func (s *RedisSentinel) Configure(cfg *config.Config) {
	cfg.RedisMode, cfg.RedisAddr, cfg.RedisMasterName = config.RedisSentinel, s.Addrs(), SentinelMasterName
}

// WaitPromoted waits (up to 30 s) until every sentinel names the replica as the
// master and the replica itself has the master role.
func (s *RedisSentinel) WaitPromoted() {
	s.t.Helper()
	ctx := context.Background()
	replica := s.Replica.Client(s.t)
	waitFor(s.t, 30*time.Second, func() bool {
		for _, sn := range s.Sentinels {
			c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr})
			addr, err := c.GetMasterAddrByName(ctx, SentinelMasterName).Result()
			_ = c.Close()
			if err != nil || len(addr) != 2 || addr[1] != strconv.Itoa(s.Replica.Port) {
				return false
			}
		}
		return redisInfo(ctx, replica, "replication", "role") == "master"
	}, "the sentinels to promote the replica")
}
