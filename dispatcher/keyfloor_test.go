package dispatcher

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

// TestKeyFloors: a key's floor is the highest offset of it the previous owner's
// ordered jobs finished; it covers the key's lower offsets only, never a keyless
// message or another key's, and unordered or retry reports set none.
func TestKeyFloors(t *testing.T) {
	t.Parallel()
	f := keyFloorsOf(map[int64]string{60: "a", 52: "a", 40: "b", 70: ""})
	require.Equal(t, keyFloors{"a": 60, "b": 40}, f)
	cases := []struct {
		off  int64
		key  string
		want bool
	}{
		{58, "a", true},   // popped by the dead owner and never committed
		{60, "a", false},  // the floor itself: replayed, not covered
		{61, "a", false},  // later messages of the key are still to send
		{39, "b", true},   //
		{58, "b", false},  // above b's floor
		{58, "c", false},  // no floor for c
		{10, "", false},   // keyless messages are not ordered
		{69, "zz", false}, // a key with no report
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, f.covers(tc.off, tc.key), "offset %d key %q", tc.off, tc.key)
	}
	require.Equal(t, int64(60), f.top())
	require.Nil(t, keyFloorsOf(map[int64]string{5: ""}), "keyless offsets set no floor")

	done := delivery.Report{Ordered: true, Delivered: []delivery.Range{{58, 60}}, DeadLettered: []delivery.Range{{62, 62}},
		RetryWritten: []delivery.Range{{64, 64}}, Returned: map[delivery.Reason][]delivery.Range{delivery.ReasonFenced: {{66, 66}}}}
	require.Equal(t, []int64{58, 59, 60, 62}, orderedDone(done), "delivered and dead-lettered only")
	done.Ordered = false
	require.Empty(t, orderedDone(done), "an unordered job's report proves nothing about a key's order")
	done.Ordered, done.Retry = true, true
	require.Empty(t, orderedDone(done))
}

// TestTakeoverKeyFloorNotResent reproduces a crash within the owner's commit delay:
// it had popped the report of 58 (key a) without committing it, cut and finished 60
// (key a) whose report waits in its list. The new owner re-reads 58 from the listed
// commit; the floor marks it done instead of sending it after 60, unblocks a key
// whose saved block's head is below its floor, leaves other keys alone, and is
// dropped once nothing below it can come to send.
func TestTakeoverKeyFloorNotResent(t *testing.T) {
	t.Parallel()
	b := setupCut(t, 16, 100)
	gs := b.group(16, 1, 0)
	gs.g.Ordered, gs.g.Ordering = true, models.OrderingKey
	cs := gs.cursors[0]
	cs.committed, cs.readPos = 60, 60
	cs.late = map[int64]int64{57: 1, 58: 1, 59: 1}
	cs.pending = []pendingMsg{{offset: 57, key: "b"}, {offset: 58, key: "a"}, {offset: 59, key: "c"}}
	cs.holes[55] = 1 // a listed row not re-read yet
	ko := b.d.orders.key
	ks := ko.state(cs)
	ks.blocks["c"] = &keyBlock{parts: map[string]keyPart{"c": {head: 50, count: 1}}, attempts: 2, at: b.now}
	ks.floors = keyFloors{"a": 60, "c": 59}

	require.False(t, ko.cut(context.Background(), gs, cs, b.now, false), "the hole at 55 holds every key")
	require.Equal(t, []pendingMsg{{offset: 57, key: "b"}, {offset: 59, key: "c"}}, cs.pending, "58 is done: a's 60 went after it")
	require.NotContains(t, cs.late, int64(58))
	require.Empty(t, ks.blocks, "c's saved block (head 50) was sent before its 59")
	require.NotNil(t, ks.floors, "the open hole at 55 may still hold a message of a")

	cs.markDone(55) // re-read: a filtered-out row, say
	require.True(t, ko.cut(context.Background(), gs, cs, b.now, false))
	require.Nil(t, ks.floors, "read past 60 with no hole below it: nothing more to cover")
	b.d.flush(context.Background())
	var sent []int64
	for _, j := range b.q.jobs {
		sent = append(sent, delivery.Expand(j.Offsets)...)
	}
	require.Equal(t, []int64{57}, sent, "b's 57 goes first (one message a POST); 58 never")
}
