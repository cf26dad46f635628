package store_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/pushauth"
	"github.com/heraldhq/herald/internal/secrets"
	"github.com/heraldhq/herald/models"
)

// TestPushKeysAndEndpointAuthAtRest: push keys and endpoint credentials are sealed in
// their tables and read back; a rotation keeps the old key published and makes the
// new one sign; plaintext rows are resealed by GroupSecretsReseal.
func TestPushKeysAndEndpointAuthAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	_, err := st.TopicCreate(ctx, "orders", 1)
	require.NoError(t, err)

	legacy := &models.Group{Name: "legacy", EndpointURL: "https://rx.example", SigningSecret: "whsec_x",
		Subscriptions: []models.Subscription{{Topic: "orders"}}, EndpointAuth: models.EndpointAuth{Headers: map[string]string{"x-api-key": "plain-key"}}}
	legacy.ApplyDefaults()
	require.NoError(t, st.GroupCreate(ctx, legacy)) // no keyring yet: plaintext
	first, err := st.Accounts().PushKeyEnsure(ctx, pushauth.NewKey())
	require.NoError(t, err)

	ka, err := secrets.ParseKeyring(keyA, nil)
	require.NoError(t, err)
	st.UseKeyring(ka)
	_, err = st.GroupSecretsReseal(ctx)
	require.NoError(t, err)
	var rawAuth, rawKey string
	require.NoError(t, st.DB().QueryRow("SELECT endpoint_auth FROM consumer_groups WHERE id = ?", legacy.ID).Scan(&rawAuth))
	require.NoError(t, st.DB().QueryRow("SELECT private_key FROM push_keys WHERE kid = ?", first.ID).Scan(&rawKey))
	require.True(t, strings.HasPrefix(rawAuth, secrets.SealedPrefix), rawAuth)
	require.True(t, strings.HasPrefix(rawKey, secrets.SealedPrefix), rawKey)
	require.NotContains(t, rawKey, base64.StdEncoding.EncodeToString(first.Seed))
	got, err := st.GroupGetByID(ctx, legacy.ID)
	require.NoError(t, err)
	require.Equal(t, "plain-key", got.EndpointAuth.Headers["x-api-key"])

	again, err := st.Accounts().PushKeyEnsure(ctx, pushauth.NewKey())
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID, "ensure keeps the signing key")
	require.Equal(t, first.Seed, again.Seed)
	next := pushauth.NewKey()
	require.NoError(t, st.Accounts().PushKeyRotate(ctx, next))
	cur, err := st.Accounts().PushKeyCurrent(ctx)
	require.NoError(t, err)
	require.Equal(t, next.ID, cur.ID)
	pub, err := st.Accounts().PushKeyPublished(ctx)
	require.NoError(t, err)
	require.Len(t, pub, 2)
	require.Equal(t, next.ID, pub[0].ID, "newest first")
	require.NotNil(t, pub[1].RetiredAt)
}
