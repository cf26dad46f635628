package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
)

// holeSetup starts Herald with a one-queue topic and a subscribed group.
func holeSetup(t *testing.T) (*heraldtest.Herald, *heraldtest.Receiver, string, int64) {
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("holes", 1)
	r := heraldtest.NewReceiver(t)
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "subscriptions": []map[string]any{{"topic": "holes"}}}))
	key := h.CreateAPIKey("holes")
	first := h.Publish(key, "holes", map[string]any{"body": map[string]int{"n": 0}})
	r.WaitCount(1, 10*time.Second)
	return h, r, key, first[0].Queue
}

func cursorOf(t *testing.T, h *heraldtest.Herald, queue int64) (int64, []models.Hole) {
	var off int64
	var holes []byte
	require.NoError(t, h.Store.DB().QueryRow("SELECT committed_offset, holes FROM cursors WHERE queue_id = ?", queue).Scan(&off, &holes))
	var hs []models.Hole
	require.NoError(t, json.Unmarshal(holes, &hs))
	return off, hs
}

// TestHoleCommittedLate holds a publish transaction open while later ids commit and
// releases it after several polls: its message must still be delivered and the
// cursor must end past it with no open holes.
func TestHoleCommittedLate(t *testing.T) {
	t.Parallel()
	h, r, key, queue := holeSetup(t)
	ctx := context.Background()
	tx, err := h.Store.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	res, err := tx.ExecContext(ctx, "INSERT INTO "+models.QueueTableName(queue)+" (body, content_type, created_at) VALUES ('{\"late\":true}', 'application/json', ?)", time.Now().UnixMilli())
	require.NoError(t, err)
	lateID, _ := res.LastInsertId()
	later := h.Publish(key, "holes", map[string]any{"body": 1}, map[string]any{"body": 2})
	require.Greater(t, later[0].Offset, lateID)
	t.Cleanup(func() { _ = tx.Rollback() }) // before the database is dropped, should the test fail
	r.WaitCount(3, 10*time.Second)
	time.Sleep(3 * h.Cfg.Dispatcher.PollInterval) // the hole stays open over several polls (proves it is not skipped)
	waitListedOnly(t, h, queue, later[1].Offset, lateID)
	require.NoError(t, tx.Commit())

	lateMsg := models.MessageID(queue, lateID)
	require.Eventually(t, func() bool { return len(r.Get(lateMsg)) > 0 }, 10*time.Second, 10*time.Millisecond)
	require.JSONEq(t, `{"late":true}`, string(r.Get(lateMsg)[0].Body))
	require.Eventually(t, func() bool {
		off, hs := cursorOf(t, h, queue)
		return off == later[1].Offset && len(hs) == 0
	}, 10*time.Second, 20*time.Millisecond)
}

// TestHoleRolledBack rolls an insert back: the cursor passes the hole once
// gap_timeout has elapsed, and nothing is delivered for it.
func TestHoleRolledBack(t *testing.T) {
	t.Parallel()
	h, r, key, queue := holeSetup(t)
	ctx := context.Background()
	tx, err := h.Store.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	res, err := tx.ExecContext(ctx, "INSERT INTO "+models.QueueTableName(queue)+" (body, content_type, created_at) VALUES ('{}', 'application/json', ?)", time.Now().UnixMilli())
	require.NoError(t, err)
	goneID, _ := res.LastInsertId()
	t.Cleanup(func() { _ = tx.Rollback() }) // before the database is dropped, should the test fail
	later := h.Publish(key, "holes", map[string]any{"body": 1})
	r.WaitCount(2, 10*time.Second)
	holes := waitListedOnly(t, h, queue, later[0].Offset, goneID)
	require.NoError(t, tx.Rollback())
	require.Eventually(t, func() bool {
		off, hs := cursorOf(t, h, queue)
		return off == later[0].Offset && len(hs) == 0
	}, 15*time.Second, 20*time.Millisecond)
	open := time.Since(time.UnixMilli(holes[0].FirstSeenMS))
	require.GreaterOrEqual(t, open, h.Cfg.Dispatcher.GapTimeout, "the hole closed only after gap_timeout")
	require.Empty(t, r.Get(models.MessageID(queue, goneID)))
	require.Equal(t, 2, r.Count())
}

// waitCommitted waits until the cursor of queue is committed at offset and returns it.
func waitCommitted(t *testing.T, h *heraldtest.Herald, queue, offset int64) (int64, []models.Hole) {
	t.Helper()
	var off int64
	var hs []models.Hole
	require.Eventually(t, func() bool {
		off, hs = cursorOf(t, h, queue)
		return off == offset
	}, 10*time.Second, 20*time.Millisecond, "cursor of queue %d never reached %d", queue, offset)
	return off, hs
}

// waitListedOnly waits until queue's cursor is committed at offset and lists only
// the open hole at id: the delivered messages after it are done in the commit (their
// reports may reach the dispatcher after the receiver saw them), the hole is not.
func waitListedOnly(t *testing.T, h *heraldtest.Herald, queue, offset, id int64) []models.Hole {
	t.Helper()
	var off int64
	var hs []models.Hole
	require.Eventually(t, func() bool {
		off, hs = cursorOf(t, h, queue)
		return off == offset && len(hs) == 1 && hs[0].From == id && hs[0].To == id
	}, 10*time.Second, 20*time.Millisecond, "cursor of queue %d never committed at %d listing only %d (last: %d %v)", queue, offset, id, off, hs)
	return hs
}

// TestHoleCommittedAfterGapTimeout: a transaction that commits only after its hole
// was closed as a rollback is still delivered, through the retry topic, when the
// closed hole is checked once more (a late row, which alerts).
func TestHoleCommittedAfterGapTimeout(t *testing.T) {
	t.Parallel()
	h, r, key, queue := holeSetup(t)
	ctx := context.Background()
	tx, err := h.Store.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	res, err := tx.ExecContext(ctx, "INSERT INTO "+models.QueueTableName(queue)+" (body, content_type, created_at) VALUES ('{\"very\":\"late\"}', 'application/json', ?)", time.Now().UnixMilli())
	require.NoError(t, err)
	lateID, _ := res.LastInsertId()
	later := h.Publish(key, "holes", map[string]any{"body": 1})
	require.Eventually(t, func() bool {
		off, hs := cursorOf(t, h, queue)
		return off == later[0].Offset && len(hs) == 0
	}, 15*time.Second, 20*time.Millisecond, "the hole closes as a rollback")
	require.NoError(t, tx.Commit())
	lateMsg := models.MessageID(queue, lateID)
	require.Eventually(t, func() bool { return len(r.Get(lateMsg)) > 0 }, 15*time.Second, 20*time.Millisecond)
	require.JSONEq(t, `{"very":"late"}`, string(r.Get(lateMsg)[0].Body))
}
