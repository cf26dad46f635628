package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/secrets"
	"github.com/heraldhq/herald/models"
)

// TestCrossNodeRequestsAtomicUnderKill publishes keyed requests whose 8 keys land
// on queues of both db nodes (stored under XA) from 4 publishers, kills node 2's
// mariadbd with SIGKILL mid-stream, brings it back on the same data directory and
// resolves prepared branches (store.XARecover). Then every request is stored
// entirely or not at all, counted over both servers' queue tables, and every
// request answered 201 is stored entirely.
func TestCrossNodeRequestsAtomicUnderKill(t *testing.T) {
	t.Parallel()
	srv := startKillableMariaDB(t, "herald_xa2")
	h := heraldtest.StartHerald(t, nil)
	h.Admin("POST", "/nodes", map[string]any{"name": "data-2", "dsn": srv.dsn(), "weight": 100, "state": "read-write"}, 201)
	var topic struct {
		Queues []struct {
			ID   int64 `json:"id"`
			Node int64 `json:"node"`
		} `json:"queues"`
	}
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/topics", map[string]any{"name": "xa", "queues": 4}, 201), &topic))
	perNode := map[int64][]int64{}
	for _, q := range topic.Queues {
		perNode[q.Node] = append(perNode[q.Node], q.ID)
	}
	require.Len(t, perNode, 2, "the topic's queues span both nodes")
	key := h.CreateAPIKey("xa")

	const perRequest = 8
	var (
		mu       sync.Mutex
		accepted = map[int]bool{} // request number → answered 201
		sent     int
		codes    = map[int]int{}
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := p*1_000_000 + i
				msgs := make([]map[string]any, perRequest)
				for j := range msgs {
					msgs[j] = map[string]any{"key": fmt.Sprintf("r%d-k%d", r, j), "body": map[string]int{"r": r, "j": j}}
				}
				code, _, _ := h.Do("POST", "/v1/topics/xa/messages", key, map[string]any{"messages": msgs})
				mu.Lock()
				sent++
				codes[code]++
				if code == 201 {
					accepted[r] = true
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	srv.kill(t)
	time.Sleep(1 * time.Second)
	close(stop)
	wg.Wait()
	srv.restart(t)
	t.Logf("%d requests of %d keyed messages: answered %v", sent, perRequest, codes)
	require.Positive(t, codes[201], "requests were stored before the kill")

	// Prepared branches left by the kill are resolved by their decision rows.
	// The test's Store opens node 2 with the Herald's key, as the api does.
	kr, err := secrets.ParseKeyring(h.Cfg.EncryptionKey, h.Cfg.EncryptionOldKeys)
	require.NoError(t, err)
	h.Store.UseKeyring(kr)
	var lastErr error
	require.Eventually(t, func() bool {
		n, err := h.Store.Queues().XARecover(t.Context())
		if err != nil && (lastErr == nil || err.Error() != lastErr.Error()) {
			t.Logf("XA recovery: %v", err)
		}
		lastErr = err
		if err == nil {
			t.Logf("XA recovery resolved %d prepared branches", n)
		}
		return err == nil
	}, 30*time.Second, 500*time.Millisecond, "XA recovery reaches the returned node")

	db2, err := sql.Open("mysql", srv.dsn())
	require.NoError(t, err)
	defer db2.Close()
	stored := map[int]int{} // request number → messages stored over both nodes
	for node, queues := range perNode {
		db := h.Store.DB()
		if node != models.PrimaryNodeID {
			db = db2
		}
		for _, q := range queues {
			rows, err := db.Query("SELECT body FROM " + models.QueueTableName(q))
			require.NoError(t, err)
			for rows.Next() {
				var body []byte
				require.NoError(t, rows.Scan(&body))
				var m struct{ R int }
				require.NoError(t, json.Unmarshal(body, &m))
				stored[m.R]++
			}
			require.NoError(t, rows.Err())
			rows.Close()
		}
	}
	for r, n := range stored {
		require.Equal(t, perRequest, n, "request %d is stored half: %d of %d messages", r, n, perRequest)
	}
	for r := range accepted {
		require.Equal(t, perRequest, stored[r], "request %d answered 201 but %d of %d messages are stored", r, stored[r], perRequest)
	}
}
