package delivery

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Scan calls fn with each page (up to count keys) of the keys matching pattern
// (SCAN MATCH syntax, e.g. Keys.Patterns) on rdb. On a Redis Cluster client it
// walks every master, since SCAN sees one node's keys only; fn is never called
// concurrently. It returns the first SCAN error, after the pages read until then.
func Scan(ctx context.Context, rdb redis.UniversalClient, pattern string, count int64, fn func(keys []string)) error {
	c, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return scanNode(ctx, rdb, pattern, count, fn)
	}
	var mu sync.Mutex
	serial := func(keys []string) {
		mu.Lock()
		defer mu.Unlock()
		fn(keys)
	}
	return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		return scanNode(ctx, node, pattern, count, serial)
	})
}

// scanNode is Scan on one server.
func scanNode(ctx context.Context, rdb redis.Cmdable, pattern string, count int64, fn func([]string)) error {
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, count).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			fn(keys)
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
