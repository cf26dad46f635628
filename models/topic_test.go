package models

import (
	"hash/fnv"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeySlot pins the slot of a few keys: a change would move keyed messages to
// other queues and break per-key order on live topics.
func TestKeySlot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		slot int
	}{
		{"a", 300}, {"cust-1", 388}, {"cust-2", 573}, {"order:42", 753}, {"ключ", 481}, {"🔑", 807}, {" x", 5},
		{strings.Repeat("k", 255), 300},
	} {
		require.Equal(t, tc.slot, KeySlot(tc.key), tc.key)
	}
}

// TestQueueForKey: keys map as they did when the publish handler hashed them
// itself (fnv32a(key) % KeySlots, then the topic's slot table or, without one,
// position slot % queues), for topics with and without slot tables, after growth,
// and with a table naming a queue the topic lacks.
func TestQueueForKey(t *testing.T) {
	t.Parallel()
	queues := func(n int, firstID int64) []Queue {
		var out []Queue
		for i := range n {
			out = append(out, Queue{ID: firstID + int64(i), Position: i, State: QueueReadWrite})
		}
		return out
	}
	// before is the mapping the publish handler computed on its own, kept here as the oracle.
	before := func(t *Topic, key string) (Queue, bool) {
		h := fnv.New32a()
		h.Write([]byte(key))
		return t.SlotQueue(int(h.Sum32() % KeySlots))
	}
	three := queues(3, 10)
	grown := &Topic{Queues: append(queues(3, 10), queues(2, 20)...), Slots: InitialSlots(three)}
	missing := &Topic{Queues: three, Slots: InitialSlots(three)}
	missing.Slots[KeySlot("cust-1")] = 99
	for _, tc := range []struct {
		name  string
		topic *Topic
		key   string
		want  int64 // queue id; 0 for none
	}{
		{"no slot table", &Topic{Queues: three}, "cust-1", 10 + 388%3},
		{"slot table", &Topic{Queues: three, Slots: InitialSlots(three)}, "cust-2", 10 + 573%3},
		{"grown topic keeps slots", grown, "order:42", 10 + 753%3},
		{"one queue", &Topic{Queues: queues(1, 7), Slots: InitialSlots(queues(1, 7))}, "a", 7},
		{"table names a missing queue", missing, "cust-1", 0},
		{"other slots of that table", missing, "cust-2", 10 + 573%3},
	} {
		q, ok := tc.topic.QueueForKey(tc.key)
		require.Equal(t, tc.want != 0, ok, tc.name)
		require.Equal(t, tc.want, q.ID, tc.name)
	}
	for _, topic := range []*Topic{{Queues: three}, {Queues: queues(7, 1)}, grown, missing} {
		for i := range 2000 {
			key := "key-" + strconv.Itoa(i)
			wantQ, wantOK := before(topic, key)
			q, ok := topic.QueueForKey(key)
			require.Equal(t, wantOK, ok, key)
			require.Equal(t, wantQ, q, key)
		}
	}
}
