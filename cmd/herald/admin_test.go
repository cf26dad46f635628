package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models/store"
)

// TestCLICreatesThroughControl: `herald apikey create` and `herald user create`
// validate like the API (a 121-byte key name is refused, naming the flag) and write
// the audit log as actor cli. Not parallel: the commands set HERALD_* variables.
func TestCLICreatesThroughControl(t *testing.T) {
	t.Setenv("HERALD_BCRYPT_COST", "4")
	dsn, st := heraldtest.Database(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		run     func(context.Context, []string) error
		args    []string
		wantErr string
	}{
		{"key name too long", runAPIKey, []string{"create", "--name", strings.Repeat("k", 121), "--topics", "orders"}, "--name: names are 1 to 120 bytes"},
		{"bad topic pattern", runAPIKey, []string{"create", "--name", "ci", "--topics", "orders,Orders!"}, "--topics: a topic name"},
		{"key", runAPIKey, []string{"create", "--name", "ci", "--topics", "orders,orders.*"}, ""},
		{"short password", runUser, []string{"create", "--username", "ops", "--password", "short"}, "--password: passwords are 8 to 72 bytes"},
		{"unknown role", runUser, []string{"create", "--username", "ops", "--password", "correct horse", "--role", "root"}, "--role: must be admin"},
		{"user", runUser, []string{"create", "--username", "ops", "--password", "correct horse", "--role", "operator"}, ""},
	} {
		err := tc.run(ctx, append(tc.args, "--mysql-dsn", dsn))
		if tc.wantErr != "" {
			require.ErrorContains(t, err, tc.wantErr, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
	}
	es, err := st.AuditList(ctx, store.AuditFilter{Actor: "cli"}, 0, 10)
	require.NoError(t, err)
	var actions []string
	for _, e := range es {
		actions = append(actions, e.Action)
	}
	require.Equal(t, []string{"user.create", "apikey.create"}, actions, "newest first; refused commands leave no entry")
}
