package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlagsOverrideConfig: a flag wins over its HERALD_* variable on the Config,
// and the process environment is left as it was.
func TestFlagsOverrideConfig(t *testing.T) {
	t.Setenv("HERALD_NAMESPACE", "from-env")
	t.Setenv("HERALD_REDIS_ADDR", "redis.example:6379")
	fs, vals := newFlags("test")
	require.NoError(t, fs.Parse([]string{"--namespace", "from-flag", "--http-addr", "127.0.0.1:1"}))
	cfg, err := loadConfig(vals)
	require.NoError(t, err)
	require.Equal(t, "from-flag", cfg.Namespace)
	require.Equal(t, "127.0.0.1:1", cfg.HTTPAddr)
	require.Equal(t, "redis.example:6379", cfg.RedisAddr, "unset flags keep the environment's value")
	require.Equal(t, "from-env", os.Getenv("HERALD_NAMESPACE"), "flags do not rewrite the environment")
	_, set := os.LookupEnv("HERALD_HTTP_ADDR")
	require.False(t, set)
}
