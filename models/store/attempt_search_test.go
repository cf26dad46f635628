package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// TestAttemptsSearch filters one group's attempts by status, status range, error
// class and time, pages newest first without losing or repeating a row (ties on
// time included), and every filter's statement reads through an index.
func TestAttemptsSearch(t *testing.T) {
	t.Parallel()
	_, st := heraldtest.Database(t)
	ctx := context.Background()
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var as []models.DeliveryAttempt
	for g := int64(1); g <= 20; g++ {
		for i := range 300 {
			a := models.DeliveryAttempt{GroupID: g, QueueID: 1, Offset: int64(i + 1), WebhookID: "msg_1_x", Attempt: 1, Status: 200,
				CreatedAt: base.Add(time.Duration(i/2) * time.Second)} // two attempts per second: ties on time
			switch i % 10 {
			case 3:
				a.Status, a.ErrorClass = 503, "http_status"
			case 7:
				a.Status, a.ErrorClass = 0, "timeout"
			case 9:
				a.Status, a.ErrorClass = 404, "http_status"
			}
			as = append(as, a)
		}
	}
	require.NoError(t, st.AttemptsInsert(ctx, as))
	_, err := st.DB().ExecContext(ctx, "ANALYZE TABLE delivery_attempts")
	require.NoError(t, err)

	count := func(f store.AttemptFilter) int {
		n := 0
		seen := map[int64]bool{}
		var last *store.AttemptRecord
		for {
			f.Limit = 7
			rs, err := st.AttemptsSearch(ctx, f)
			require.NoError(t, err)
			for _, r := range rs {
				require.False(t, seen[r.ID], "row %d listed twice", r.ID)
				seen[r.ID] = true
				require.Equal(t, int64(5), r.GroupID)
				if last != nil {
					require.False(t, r.CreatedAt.After(last.CreatedAt), "newest first")
				}
				last = &r
			}
			n += len(rs)
			if len(rs) < f.Limit {
				return n
			}
			p := rs[len(rs)-1].Position()
			f.After = &p
		}
	}
	g := int64(5)
	require.Equal(t, 300, count(store.AttemptFilter{GroupID: g}))
	require.Equal(t, 30, count(store.AttemptFilter{GroupID: g, StatusFrom: 503, StatusTo: 503}))
	require.Equal(t, 60, count(store.AttemptFilter{GroupID: g, StatusFrom: 400, StatusTo: 599}))
	require.Equal(t, 30, count(store.AttemptFilter{GroupID: g, ErrorClass: "timeout"}))
	require.Equal(t, 30, count(store.AttemptFilter{GroupID: g, ErrorClass: "http_status", StatusFrom: 500, StatusTo: 599}))
	// 10 s of attempts: rows 20..39, of which 2 are timeouts.
	window := store.AttemptFilter{GroupID: g, Since: base.Add(10 * time.Second), Until: base.Add(20 * time.Second)}
	require.Equal(t, 20, count(window))
	window.ErrorClass = "timeout"
	require.Equal(t, 2, count(window))

	after := store.AttemptPosition{CreatedAt: base.Add(100 * time.Second), ID: 1 << 40}
	for _, f := range []store.AttemptFilter{
		{GroupID: g}, {GroupID: g, StatusFrom: 503, StatusTo: 503}, {GroupID: g, StatusFrom: 500, StatusTo: 599}, {GroupID: g, ErrorClass: "timeout"},
		{GroupID: g, Since: base, Until: base.Add(time.Minute), After: &after},
		{GroupID: g, ErrorClass: "http_status", StatusFrom: 404, StatusTo: 404, Since: base, After: &after},
	} {
		f.Limit = 50
		q, args := store.AttemptSearchSQL(f)
		var key sql.NullString
		var table, typ string
		rows, err := st.DB().QueryContext(ctx, "EXPLAIN "+q, args...)
		require.NoError(t, err)
		cols, _ := rows.Columns()
		require.True(t, rows.Next())
		vals := make([]any, len(cols))
		for i, c := range cols {
			switch c {
			case "key":
				vals[i] = &key
			case "table":
				vals[i] = &table
			case "type":
				vals[i] = &typ
			default:
				vals[i] = new(sql.RawBytes)
			}
		}
		require.NoError(t, rows.Scan(vals...))
		rows.Close()
		require.True(t, key.Valid, "%+v reads through an index (type %s)", f, typ)
		require.NotEqual(t, "ALL", typ, "%+v is not a full scan", f)
		if f.ErrorClass != "" {
			require.Equal(t, "idx_attempts_group_class", key.String, "%+v", f)
		}
	}
}
