package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Redis deployment modes (Config.RedisMode).
const (
	// RedisSingle is one Redis server at one address (the default).
	RedisSingle = "single"
	// RedisCluster is a Redis Cluster: the addresses are seed nodes, the rest of the
	// cluster is discovered from them.
	RedisCluster = "cluster"
	// RedisSentinel is a primary with replicas under Redis Sentinel: the addresses are
	// sentinels, asked for the current primary of RedisMasterName.
	RedisSentinel = "sentinel"
)

// RedisModes lists the accepted values of Config.RedisMode.
func RedisModes() []string { return []string{RedisSingle, RedisCluster, RedisSentinel} }

// RedisAddrs returns RedisAddr split at commas, each trimmed of spaces.
func (c Config) RedisAddrs() []string {
	parts := strings.Split(c.RedisAddr, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}

// validateRedis refuses Redis settings that contradict the mode, or that the mode
// would ignore: several addresses in single mode, a master name outside sentinel
// mode, a database other than 0 on a cluster, hash-tag braces in the namespace on
// a cluster (they would change which slot Herald's keys land in).
func (c Config) validateRedis() error {
	var errs []error
	addrs := c.RedisAddrs()
	switch {
	case strings.TrimSpace(c.RedisAddr) == "":
		errs = append(errs, errors.New("HERALD_REDIS_ADDR is empty"))
	case slices.Contains(addrs, ""):
		errs = append(errs, fmt.Errorf("HERALD_REDIS_ADDR %q has an empty address", c.RedisAddr))
	}
	switch c.RedisMode {
	case RedisSingle:
		if len(addrs) > 1 {
			errs = append(errs, fmt.Errorf("HERALD_REDIS_ADDR lists %d addresses but HERALD_REDIS_MODE is single: "+
				"set HERALD_REDIS_MODE=cluster (cluster nodes) or sentinel (sentinels), or give one address", len(addrs)))
		}
	case RedisCluster:
		if c.RedisDB != 0 {
			errs = append(errs, errors.New("HERALD_REDIS_DB must be 0 with HERALD_REDIS_MODE=cluster (a cluster has only database 0)"))
		}
		if strings.ContainsAny(c.Namespace, "{}") {
			errs = append(errs, errors.New("HERALD_NAMESPACE must not contain { or } with HERALD_REDIS_MODE=cluster (they are hash-tag delimiters)"))
		}
	case RedisSentinel:
		if c.RedisMasterName == "" {
			errs = append(errs, errors.New("HERALD_REDIS_MASTER_NAME is required with HERALD_REDIS_MODE=sentinel"))
		}
	default:
		errs = append(errs, fmt.Errorf("HERALD_REDIS_MODE %q is not one of %s", c.RedisMode, strings.Join(RedisModes(), ", ")))
	}
	if c.RedisMasterName != "" && c.RedisMode != RedisSentinel {
		errs = append(errs, errors.New("HERALD_REDIS_MASTER_NAME applies only with HERALD_REDIS_MODE=sentinel; unset it"))
	}
	return errors.Join(errs...)
}
