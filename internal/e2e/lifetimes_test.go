package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

// TestIdempotencyKeyExpires: a key's stored outcome answers for 24 h only. Once its
// row is older (backdated in SQL), the key publishes anew at once, before any prune
// ran, and its new outcome is what replays from then on.
func TestIdempotencyKeyExpires(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("idem", 1)
	key := h.CreateAPIKey("idem")
	publish := func(idemKey string, body any) (int, []byte, string) {
		code, out, hdr := h.Do("POST", "/v1/topics/idem/messages", key, map[string]any{"messages": []any{map[string]any{"body": body}}}, "Idempotency-Key", idemKey)
		return code, out, hdr.Get("Idempotent-Replayed")
	}
	code, first, _ := publish("order-1", 1)
	require.Equal(t, 201, code, string(first))
	db := h.Store.DB()
	_, err := db.Exec("UPDATE idempotency_keys SET created_at = NOW(3) - INTERVAL 25 HOUR")
	require.NoError(t, err)

	code, second, replayed := publish("order-1", 2)
	require.Equal(t, 201, code, "a key past its 24 h is free again: %s", second)
	require.Empty(t, replayed)
	require.NotEqual(t, string(first), string(second), "a new message was stored")
	code, again, replayed := publish("order-1", 2)
	require.Equal(t, 201, code, string(again))
	require.Equal(t, "true", replayed, "the new outcome answers for the key")
	require.JSONEq(t, string(second), string(again))
	code, other, _ := publish("order-1", 3)
	require.Equal(t, 422, code, "the renewed key is live: another body is refused: %s", other)
	var stored, rows int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM queue_000001").Scan(&stored))
	require.Equal(t, 2, stored)
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM idempotency_keys WHERE created_at > NOW(3) - INTERVAL 1 HOUR").Scan(&rows))
	require.Equal(t, 1, rows, "the expired row was replaced in place")
}
