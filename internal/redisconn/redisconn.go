// Package redisconn builds Herald's Redis connections from its settings: one
// go-redis client for Herald's own keys and channels, and the matching asynq
// connection option for the delivery queue, for each deployment mode
// (config.RedisSingle, RedisCluster, RedisSentinel).
package redisconn

import (
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/config"
)

// poolSize caps each process's connections per Redis node (go-redis and asynq each).
const poolSize = 64

// Open returns a go-redis client and an asynq connection option for cfg's Redis
// settings, which must have passed config.Config.Validate: redis.NewClient and
// asynq.RedisClientOpt in single mode, redis.NewClusterClient and
// asynq.RedisClusterClientOpt in cluster mode, redis.NewFailoverClient and
// asynq.RedisFailoverClientOpt in sentinel mode. It connects lazily: nothing is
// dialled until the first command. The caller closes the client.
func Open(cfg config.Config) (redis.UniversalClient, asynq.RedisConnOpt) {
	addrs := cfg.RedisAddrs()
	switch cfg.RedisMode {
	case config.RedisCluster:
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Password: cfg.RedisPassword, PoolSize: poolSize}),
			asynq.RedisClusterClientOpt{Addrs: addrs, Password: cfg.RedisPassword}
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
