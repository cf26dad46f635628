package api_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// TestAPIKeyRevocationReachesEveryInstance: a key revoked through one api instance
// stops working on another, which had it cached, within the 5 s cache period.
func TestAPIKeyRevocationReachesEveryInstance(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 1)
	key := h.CreateAPIKey("orders")
	var keyID int64
	for _, k := range decode[struct {
		Items []struct {
			ID     int64
			Prefix string
		}
	}](t, h.Admin("GET", "/api-keys", nil, 200)).Items {
		keyID = k.ID
	}
	first := h.BaseURL
	publish := func() int {
		code, _, _ := h.Do("POST", "/v1/topics/orders/messages", key, map[string]any{"messages": []map[string]any{{"body": 1}}})
		return code
	}
	require.Equal(t, http.StatusCreated, publish(), "the first instance caches the key")

	h.Start(app.Roles{API: true}) // a second api instance; h.BaseURL points at it now
	second := h.BaseURL
	require.NotEqual(t, first, second)
	h.Admin("POST", "/api-keys/"+strconv.FormatInt(keyID, 10)+"/revoke", nil, 200)
	require.Equal(t, http.StatusUnauthorized, publish(), "refused at once where it was revoked")

	h.BaseURL = first
	revoked := time.Now()
	require.Eventually(t, func() bool { return publish() == http.StatusUnauthorized }, 6*time.Second, 100*time.Millisecond)
	require.Less(t, time.Since(revoked), 5500*time.Millisecond, "refused within the 5 s key cache")
}
