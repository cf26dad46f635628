package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
)

// TestEndpointAuthLimitsStoredAndIsolated: 20 headers of 4,096 bytes (the documented
// maximum, of a character JSON escapes to 6 bytes) are stored and read back whole;
// a row truncated by a non-strict session makes only its own group unreadable,
// never the list.
func TestEndpointAuthLimitsStoredAndIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, st := heraldtest.Database(t)
	_, err := st.TopicCreate(ctx, "orders", 1)
	require.NoError(t, err)
	big := newGroup(t, st, "big")
	healthy := newGroup(t, st, "healthy")
	big.EndpointAuth = models.EndpointAuth{Headers: map[string]string{}, Basic: nil}
	for i := range models.MaxEndpointHeaders {
		big.EndpointAuth.Headers[fmt.Sprintf("x-h%02d", i)] = strings.Repeat("<", models.MaxEndpointHeaderBytes)
	}
	require.NoError(t, big.Validate())
	require.NoError(t, st.GroupUpdate(ctx, big))
	got, err := st.GroupGetByID(ctx, big.ID)
	require.NoError(t, err)
	require.Empty(t, got.Unreadable)
	require.Equal(t, big.EndpointAuth.Headers, got.EndpointAuth.Headers)

	// A session without strict mode truncates instead of failing.
	db := st.DB()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = conn.ExecContext(ctx, "SET SESSION sql_mode = ''")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "UPDATE consumer_groups SET endpoint_auth = LEFT(endpoint_auth, 100) WHERE id = ?", big.ID)
	require.NoError(t, err)
	_ = dsn
	gs, err := st.GroupList(ctx, 0, 0)
	require.NoError(t, err, "one unreadable group does not fail the list")
	require.Len(t, gs, 2)
	require.NotEmpty(t, gs[0].Unreadable)
	require.Empty(t, gs[1].Unreadable)
	require.Equal(t, healthy.Name, gs[1].Name)
}
