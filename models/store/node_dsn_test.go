package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNodeDSNRefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dsn     string
		refused string // an option the refusal names; "" when allowed
	}{
		{dsn: "herald:pw@tcp(10.0.0.5:3306)/herald"},
		{dsn: "herald:pw@tcp(10.0.0.5:3306)/herald?tls=true&timeout=3s&readTimeout=10s&writeTimeout=10s&charset=utf8mb4"},
		{dsn: "herald:p?w/x@tcp(10.0.0.5:3306)/herald?compress=true"}, // '?' and '/' in the password
		{dsn: "herald:pw@tcp(10.0.0.5:3306)/herald?allowAllFiles=true", refused: "allowAllFiles"},
		{dsn: "herald:pw@tcp(10.0.0.5:3306)/herald?tls=true&allowCleartextPasswords=1", refused: "allowCleartextPasswords"},
		{dsn: "herald:pw@tcp(10.0.0.5:3306)/herald?allowOldPasswords=true", refused: "allowOldPasswords"},
		{dsn: "herald:pw@tcp(10.0.0.5:3306)/herald?allowFallbackToPlaintext=true", refused: "allowFallbackToPlaintext"},
		{dsn: "herald:pw@tcp(10.0.0.5:3306)/herald?multiStatements=true", refused: "multiStatements"},
		{dsn: "herald:pw@tcp(10.0.0.5:3306)/herald?local_infile=1", refused: "local_infile"},
		{dsn: "herald:pw@tcp(10.0.0.5:3306)/herald?allow%41llFiles=true", refused: "allowAllFiles"}, // escaped key
	} {
		why := NodeDSNRefusal(tc.dsn)
		if tc.refused == "" {
			require.Empty(t, why, tc.dsn)
			continue
		}
		require.Contains(t, why, "option "+tc.refused+" is not allowed", tc.dsn)
	}
	require.Contains(t, NodeDSNRefusal("not a dsn"), "not a DSN")
}

// TestNormalizeNodeDSNNeutralises reads a DSN as db_nodes may hold it from before
// the allow-list: whatever it says, the connection reads no file, sends no clear or
// old password and sets no session variable of its own.
func TestNormalizeNodeDSNNeutralises(t *testing.T) {
	t.Parallel()
	cfg, err := NormalizeNodeDSN("herald:pw@tcp(10.0.0.5:3306)/herald?allowAllFiles=true&allowCleartextPasswords=true&allowOldPasswords=true&allowFallbackToPlaintext=true&multiStatements=true&local_infile=1&tls=skip-verify")
	require.NoError(t, err)
	require.False(t, cfg.AllowAllFiles)
	require.False(t, cfg.AllowCleartextPasswords)
	require.False(t, cfg.AllowOldPasswords)
	require.False(t, cfg.AllowFallbackToPlaintext)
	require.False(t, cfg.MultiStatements)
	require.NotContains(t, cfg.Params, "local_infile")
	require.Equal(t, SessionSQLMode, cfg.Params["sql_mode"], "Herald's own session settings stay")
	require.Equal(t, "skip-verify", cfg.TLSConfig, "an allowed option is kept")
	require.NotContains(t, cfg.FormatDSN(), "allowAllFiles")
}
