package api_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
)

type node struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	DSN    string `json:"dsn"`
	Weight int    `json:"weight"`
	State  string `json:"state"`
	Queues int    `json:"queues"`
}

// exerciseNodes drives every /api/v1/nodes operation through sc against openapi.yaml,
// registering a second database of the shared server as a node.
func exerciseNodes(t *testing.T, sc *specClient, tok string) {
	t.Helper()
	dsn, _ := heraldtest.Database(t)
	nodes := decode[struct{ Items []node }](t, sc.do("GET", "/api/v1/nodes", tok, nil, 200))
	require.Equal(t, "primary", nodes.Items[0].Name)
	require.Equal(t, "read-write", nodes.Items[0].State)
	require.Positive(t, nodes.Items[0].Queues, "node 1 holds the topics' queues")

	n := decode[node](t, sc.do("POST", "/api/v1/nodes", tok, map[string]any{"name": "data-2", "dsn": dsn}, 201))
	require.Equal(t, "read-only", n.State)
	require.Equal(t, 100, n.Weight)
	sc.do("POST", "/api/v1/nodes", tok, map[string]any{"name": "data-3", "dsn": dsn}, 409)
	sc.do("POST", "/api/v1/nodes", tok, map[string]any{"name": "data-3", "dsn": dsn, "state": "draining"}, 422)
	sc.do("GET", fmt.Sprintf("/api/v1/nodes/%d", n.ID), tok, nil, 200)
	sc.do("GET", "/api/v1/nodes/999", tok, nil, 404)
	require.Equal(t, 7, decode[node](t, sc.do("PATCH", fmt.Sprintf("/api/v1/nodes/%d", n.ID), tok, map[string]any{"weight": 7}, 200)).Weight)
	sc.do("PATCH", "/api/v1/nodes/1", tok, map[string]any{"state": "read-only"}, 422)
	// A topic re-homed onto fresh queues of node 1 (a second move while the first is
	// not retired is refused: TestCLINodes, TestTopicMoveRefusals).
	sc.do("POST", "/api/v1/topics", tok, map[string]any{"name": "moving", "queues": 1}, 201)
	sc.do("POST", "/api/v1/topics/moving/move", tok, map[string]any{"to_node": 1}, 202)
	sc.do("POST", "/api/v1/topics/moving/move", tok, map[string]any{"to_node": 999}, 422)
	sc.do("POST", "/api/v1/topics/nope/move", tok, map[string]any{"to_node": 1}, 404)
	// Node 1 cannot drain; node 2 holds no queue, so draining it moves nothing (200).
	sc.do("POST", "/api/v1/nodes/1/drain", tok, nil, 422)
	sc.do("POST", "/api/v1/nodes/999/drain", tok, nil, 404)
	require.Equal(t, "draining", decode[struct{ Node node }](t, sc.do("POST", fmt.Sprintf("/api/v1/nodes/%d/drain", n.ID), tok, nil, 200)).Node.State)
	sc.do("PATCH", fmt.Sprintf("/api/v1/nodes/%d", n.ID), tok, map[string]any{"state": "retired"}, 200)
	sc.do("PATCH", fmt.Sprintf("/api/v1/nodes/%d", n.ID), tok, map[string]any{"weight": 8}, 409)
}

// TestNodeRegistry registers a private MariaDB server as node 2 and checks what the
// registry accepts, refuses, seals and shows.
func TestNodeRegistry(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	rootDSN := heraldtest.StartMariaDB(t, "herald_data")
	priv, err := sql.Open("mysql", rootDSN)
	require.NoError(t, err)
	t.Cleanup(func() { priv.Close() })
	for _, q := range []string{"CREATE USER 'herald'@'127.0.0.1' IDENTIFIED BY 'node-sekret'", "GRANT ALL ON herald_data.* TO 'herald'@'127.0.0.1'"} {
		_, err := priv.Exec(q)
		require.NoError(t, err)
	}
	cfg, err := mysql.ParseDSN(rootDSN)
	require.NoError(t, err)
	cfg.User, cfg.Passwd = "herald", "node-sekret"
	dsn := cfg.FormatDSN()

	problem := func(b []byte) (kind, detail string) {
		var p struct{ Type, Detail string }
		require.NoError(t, json.Unmarshal(b, &p))
		return strings.TrimPrefix(p.Type, "https://herald.dev/problems/"), p.Detail
	}
	for _, tc := range []struct {
		body   map[string]any
		detail string
	}{
		{map[string]any{"name": "data-2", "dsn": dsn, "state": "draining"}, "/drain"},
		{map[string]any{"name": "data-2", "dsn": dsn, "state": "retired"}, "cannot start retired"},
		{map[string]any{"name": "data-2", "dsn": dsn, "weight": 10001}, "/weight"},
		{map[string]any{"name": "Data 2", "dsn": dsn}, "/name"},
		{map[string]any{"name": "data-2", "dsn": strings.Replace(dsn, "node-sekret", "wrong", 1)}, "did not pass its check"},
		{map[string]any{"name": "data-2", "dsn": strings.Replace(dsn, "/herald_data", "/", 1)}, "names no database"},
	} {
		kind, detail := problem(h.Admin("POST", "/nodes", tc.body, 422))
		require.Equal(t, "validation", kind)
		require.Contains(t, detail, tc.detail)
	}
	// The control database is node 1 already.
	kind, _ := problem(h.Admin("POST", "/nodes", map[string]any{"name": "again", "dsn": h.DSN}, 409))
	require.Equal(t, "conflict", kind)

	// auto_increment_increment must be 1: Herald's gap rule reads a missing id as a hole.
	_, err = priv.Exec("SET GLOBAL auto_increment_increment = 2")
	require.NoError(t, err)
	_, detail := problem(h.Admin("POST", "/nodes", map[string]any{"name": "data-2", "dsn": dsn}, 422))
	require.Contains(t, detail, "auto_increment_increment is 2")
	_, err = priv.Exec("SET GLOBAL auto_increment_increment = 1")
	require.NoError(t, err)

	var n node
	require.NoError(t, json.Unmarshal(h.Admin("POST", "/nodes", map[string]any{"name": "data-2", "dsn": dsn, "weight": 50}, 201), &n))
	require.Equal(t, fmt.Sprintf("herald:***@tcp(%s)/herald_data", cfg.Addr), n.DSN)
	require.Equal(t, node{ID: n.ID, Name: "data-2", DSN: n.DSN, Weight: 50, State: "read-only"}, n)
	h.Admin("POST", "/nodes", map[string]any{"name": "data-2", "dsn": rootDSN}, 409) // the name is taken

	// Sealed at rest, masked in every read and in the audit log.
	var sealed string
	require.NoError(t, h.Store.DB().QueryRow("SELECT dsn_enc FROM db_nodes WHERE id = ?", n.ID).Scan(&sealed))
	require.True(t, strings.HasPrefix(sealed, "enc:v1:"), sealed)
	require.NotContains(t, sealed, "node-sekret")
	for _, path := range []string{"/nodes", fmt.Sprintf("/nodes/%d", n.ID), "/audit-log?action=node."} {
		require.NotContains(t, string(h.Admin("GET", path, nil, 200)), "node-sekret", path)
	}
	require.Contains(t, string(h.Admin("GET", "/audit-log?action=node.create", nil, 200)), "herald:***@")

	// A new DSN is checked like the first; node 1's DSN is HERALD_MYSQL_DSN.
	h.Admin("PATCH", fmt.Sprintf("/nodes/%d", n.ID), map[string]any{"dsn": strings.Replace(dsn, "node-sekret", "wrong", 1)}, 422)
	h.Admin("PATCH", "/nodes/1", map[string]any{"dsn": dsn}, 422)
	require.NoError(t, json.Unmarshal(h.Admin("PATCH", fmt.Sprintf("/nodes/%d", n.ID), map[string]any{"name": "data-two", "dsn": rootDSN}, 200), &n))
	require.Equal(t, fmt.Sprintf("root@tcp(%s)/herald_data", cfg.Addr), n.DSN)

	// Retiring refuses while the node holds a queue.
	_, err = h.Store.DB().Exec("INSERT INTO queues (topic_id, node_id, position) VALUES (0, ?, 0)", n.ID)
	require.NoError(t, err)
	kind, _ = problem(h.Admin("PATCH", fmt.Sprintf("/nodes/%d", n.ID), map[string]any{"state": "retired"}, 409))
	require.Equal(t, "in-use", kind)
	_, err = h.Store.DB().Exec("DELETE FROM queues WHERE node_id = ?", n.ID)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(h.Admin("PATCH", fmt.Sprintf("/nodes/%d", n.ID), map[string]any{"state": "retired"}, 200), &n))
	require.Equal(t, "retired", n.State)
	kind, _ = problem(h.Admin("PATCH", fmt.Sprintf("/nodes/%d", n.ID), map[string]any{"state": "read-only"}, 409))
	require.Equal(t, "conflict", kind)
}
