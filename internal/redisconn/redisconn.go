// Package redisconn builds Herald's Redis connections from its settings: one
// go-redis client for Herald's own keys and channels, and the matching asynq
// connection option for the delivery queue, for each deployment mode
// (config.RedisSingle, RedisCluster, RedisSentinel).
package redisconn

import (
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/config"
)

// poolSize caps each process's connections per Redis node (go-redis and asynq each).
const poolSize = 64

// clusterStateReload is how old a cluster client's slot map may get before a
// command reloads it (one CLUSTER SLOTS). go-redis reloads on MOVED but not when a
// dead master refuses connections, and its default of 60 s kept every enqueue
// failing for a minute after a replica had taken over (TestClusterMasterKilled:
// healthy again 3.2 s after the kill, everything delivered after 59.5 s). Cluster
// clients also reload at once when a node cannot be reached (newClusterClient),
// so this tick is the fallback; it costs about one CLUSTER SLOTS a second per
// client while busy.
const clusterStateReload = time.Second

// clusterDialAttempts is how often a cluster client's node pool dials before a
// command fails. go-redis' default is 5 attempts 100 ms apart, so every command
// sent to a killed master spent 0.4 s (twice, as the cluster client tries the
// same node again) before the client looked for another node, and a command
// begun just before the replica's promotion still failed 0.4–1.6 s after it. One
// attempt fails at once on a refused connection; the cluster client's own
// retries and the slot-map reload (newClusterClient) find the new master.
const clusterDialAttempts = 1

// Open returns a go-redis client and an asynq connection option for cfg's Redis
// settings, which must have passed config.Config.Validate: redis.NewClient and
// asynq.RedisClientOpt in single mode, redis.NewClusterClient and
// clusterOpt (asynq's cluster client built as Herald's) in cluster mode, redis.NewFailoverClient and
// asynq.RedisFailoverClientOpt in sentinel mode. It connects lazily: nothing is
// dialled until the first command. The caller closes the client.
func Open(cfg config.Config) (redis.UniversalClient, asynq.RedisConnOpt) {
	addrs := cfg.RedisAddrs()
	switch cfg.RedisMode {
	case config.RedisCluster:
		opt := redis.ClusterOptions{Addrs: addrs, Password: cfg.RedisPassword, PoolSize: poolSize,
			ClusterStateReloadInterval: clusterStateReload, DialerRetries: clusterDialAttempts}
		herald := opt
		return newClusterClient(&herald), clusterOpt{opt: opt}
	case config.RedisSentinel:
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: cfg.RedisMasterName, SentinelAddrs: addrs,
				Password: cfg.RedisPassword, DB: cfg.RedisDB, PoolSize: poolSize}),
			asynq.RedisFailoverClientOpt{MasterName: cfg.RedisMasterName, SentinelAddrs: addrs,
				Password: cfg.RedisPassword, DB: cfg.RedisDB, PoolSize: poolSize}
	default:
		return redis.NewClient(&redis.Options{Addr: cfg.RedisAddr, Password: cfg.RedisPassword, DB: cfg.RedisDB, PoolSize: poolSize}),
			asynq.RedisClientOpt{Addr: cfg.RedisAddr, Password: cfg.RedisPassword, DB: cfg.RedisDB, PoolSize: poolSize}
	}
}

// clusterOpt is asynq's connection option on a cluster. It stands in for
// asynq.RedisClusterClientOpt so that asynq's clients are built like Herald's own
// (newClusterClient: the slot map reloaded when a node cannot be reached); every
// asynq client, server or inspector made from it gets a client of its own, which
// it closes.
type clusterOpt struct{ opt redis.ClusterOptions }

// MakeRedisClient returns a new *redis.ClusterClient (asynq.RedisConnOpt).
func (o clusterOpt) MakeRedisClient() any {
	opt := o.opt
	return newClusterClient(&opt)
}
