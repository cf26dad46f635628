package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/secrets"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

const (
	keyA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	keyB = "IBxZ0DCY6OKkK7ycbfQ1rfIq4DJ+Yh1N2AU2F5HkE4A="
)

func rawSecrets(t *testing.T, st *store.Store, id int64) (cur, prev string) {
	t.Helper()
	require.NoError(t, st.DB().QueryRow("SELECT signing_secret, previous_signing_secret FROM consumer_groups WHERE id = ?", id).Scan(&cur, &prev))
	return cur, prev
}

func newGroup(t *testing.T, st *store.Store, name string) *models.Group {
	t.Helper()
	g := &models.Group{Name: name, EndpointURL: "https://example.com/hook", SigningSecret: signing.NewSecret(),
		Subscriptions: []models.Subscription{{Topic: "orders"}}}
	g.ApplyDefaults()
	require.NoError(t, st.GroupCreate(context.Background(), g))
	return g
}

// TestSigningSecretsAtRest: secrets are sealed in the table and read back in
// plaintext; rows written before encryption still read and are resealed; an
// encryption-key rotation keeps old rows readable; a secret rotation keeps the
// previous secret signing until its window closes.
func TestSigningSecretsAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	_, err := st.TopicCreate(ctx, "orders", 1)
	require.NoError(t, err)

	legacy := newGroup(t, st, "legacy") // written with no key: plaintext
	cur, _ := rawSecrets(t, st, legacy.ID)
	require.Equal(t, legacy.SigningSecret, cur)

	ka, err := secrets.ParseKeyring(keyA, nil)
	require.NoError(t, err)
	st.UseKeyring(ka)
	g := newGroup(t, st, "billing")
	cur, _ = rawSecrets(t, st, g.ID)
	require.True(t, strings.HasPrefix(cur, secrets.SealedPrefix+ka.PrimaryID()+":"), cur)
	require.NotContains(t, cur, g.SigningSecret[len("whsec_"):])
	got, err := st.GroupGetByID(ctx, g.ID)
	require.NoError(t, err)
	require.Equal(t, g.SigningSecret, got.SigningSecret)
	got, err = st.GroupGetByID(ctx, legacy.ID)
	require.NoError(t, err)
	require.Equal(t, legacy.SigningSecret, got.SigningSecret, "plaintext rows still read")

	n, err := st.GroupSecretsReseal(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	cur, _ = rawSecrets(t, st, legacy.ID)
	require.True(t, strings.HasPrefix(cur, secrets.SealedPrefix), "resealed")

	kb, err := secrets.ParseKeyring(keyB, []string{keyA})
	require.NoError(t, err)
	st.UseKeyring(kb)
	got, err = st.GroupGetByID(ctx, g.ID)
	require.NoError(t, err)
	require.Equal(t, g.SigningSecret, got.SigningSecret, "old key still opens")
	n, err = st.GroupSecretsReseal(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	cur, _ = rawSecrets(t, st, g.ID)
	require.True(t, strings.HasPrefix(cur, secrets.SealedPrefix+kb.PrimaryID()+":"))

	next := signing.NewSecret()
	until := time.Now().Add(time.Hour)
	require.NoError(t, st.GroupRotateSecret(ctx, g.ID, next, until))
	got, err = st.GroupGetByID(ctx, g.ID)
	require.NoError(t, err)
	require.Equal(t, next, got.SigningSecret)
	require.Equal(t, g.SigningSecret, got.PreviousSigningSecret)
	require.Greater(t, got.ConfigVersion, g.ConfigVersion)
	require.Equal(t, []string{next, g.SigningSecret}, got.SigningSecrets(time.Now()))
	require.Equal(t, []string{next}, got.SigningSecrets(until.Add(time.Second)), "the window closed")
	_, prev := rawSecrets(t, st, g.ID)
	require.True(t, strings.HasPrefix(prev, secrets.SealedPrefix), "the previous secret is sealed too")
}

// TestStatsRollup: counts add up per minute from many writers, lag keeps the
// largest sample of the minute, series fill empty minutes, old rows are pruned.
func TestStatsRollup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := heraldtest.Database(t)
	m := time.Now().UTC().Truncate(time.Minute)
	require.NoError(t, st.StatsAdd(ctx, m, 0, 7, 5, 0, 0))
	require.NoError(t, st.StatsAdd(ctx, m.Add(20*time.Second), 0, 7, 3, 0, 0))
	require.NoError(t, st.StatsAdd(ctx, m, 9, 7, 0, 4, 1))
	require.NoError(t, st.StatsAdd(ctx, m.Add(-2*time.Minute), 9, 0, 0, 2, 0))
	require.NoError(t, st.StatsSampleLag(ctx, m, map[int64]int64{9: 10}))
	require.NoError(t, st.StatsSampleLag(ctx, m, map[int64]int64{9: 4}))

	all, err := st.StatsSeries(ctx, store.StatsScope{}, m.Add(-3*time.Minute), m.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, all, 4)
	require.Equal(t, store.StatsPoint{Minute: m, Published: 8, Delivered: 4, Failed: 1, Lag: 10}, all[3])
	require.Equal(t, int64(2), all[1].Delivered)
	require.Zero(t, all[0].Delivered+all[2].Delivered, "empty minutes are zeros")

	grp, err := st.StatsSeries(ctx, store.StatsScope{GroupID: 9}, m, m.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, int64(0), grp[0].Published)
	tot, err := st.StatsTotalsSince(ctx, m.Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, int64(8), tot.TopicPublished[7])
	require.Equal(t, int64(6), tot.GroupDelivered[9])

	require.NoError(t, st.StatsPrune(ctx, m.Add(store.StatsRetention-90*time.Second)))
	all, err = st.StatsSeries(ctx, store.StatsScope{}, m.Add(-3*time.Minute), m.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, int64(8), all[3].Published, "rows younger than 7 days stay")
	require.Zero(t, all[1].Delivered, "older rows are pruned")
}
