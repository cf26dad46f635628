package notify

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/wire"
)

// TestRowsPayloadRoundTrip: a flush's rows survive the Redis payload (ids, tags and
// creation times; no bodies when the rows carry no message), shared creation times are sent once, and a
// payload a receiver cannot use still names the queue.
func TestRowsPayloadRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows []Row
	}{
		{"one row, no tag", []Row{{ID: 7, CreatedAt: 1000}}},
		{"contiguous, shared time", []Row{{ID: 10, CreatedAt: 5}, {ID: 11, CreatedAt: 5}, {ID: 12, CreatedAt: 5}}},
		{"gaps, tags, times", []Row{{ID: 3, Tag: "push", CreatedAt: 1}, {ID: 5, Tag: "", CreatedAt: 2}, {ID: 6, Tag: "ïssue \"x\"", CreatedAt: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := encodeRows(Event{Queue: 42, Rows: tc.rows})
			require.True(t, strings.HasPrefix(p, rowsPrefix))
			got := Parse(p)
			require.Equal(t, int64(42), got.Queue)
			require.Equal(t, tc.rows, got.Rows)
		})
	}
	shared := payloadFields(t, encodeRows(Event{Queue: 1, Rows: []Row{{ID: 1, CreatedAt: 1234567}, {ID: 2, CreatedAt: 1234567}}}))
	require.Len(t, shared["c"], 1, "a shared creation time is sent once: %v", shared)
	require.NotContains(t, payloadFields(t, encodeRows(Event{Queue: 1, Rows: []Row{{ID: 1}}})), "t", "no tags, no tag list")

	malformed := func(v any) string {
		b, err := wire.Marshal(v)
		require.NoError(t, err)
		return rowsPrefix + string(b)
	}
	for payload, want := range map[string]Event{
		"17":             {Queue: 17},
		"g9":             {Group: 9},
		"d":              {DeadLetters: true},
		"t1764950400123": {DelayedDue: 1764950400123},
		malformed(map[string]any{"q": 5, "id": [][]int64{{1, 3}}, "c": []int64{1, 2}}):                       {Queue: 5}, // 3 ids, 2 times: read the queue instead
		malformed(map[string]any{"q": 5, "id": [][]int64{{1, 1}}, "c": []int64{1}, "t": []string{"a", "b"}}): {Queue: 5},
		rowsPrefix + "{not msgpack": {},
	} {
		require.Equal(t, want, Parse(payload), payload)
	}
	big := make([]Row, MaxRowsPerPayload+1)
	for i := range big {
		big[i] = Row{ID: int64(i + 1)}
	}
	require.Equal(t, "3", encodeRows(Event{Queue: 3, Rows: big}), "a flush over the cap is announced by queue id")
}

// payloadFields decodes a rows payload's fields by name.
func payloadFields(t *testing.T, payload string) map[string]any {
	t.Helper()
	require.True(t, strings.HasPrefix(payload, rowsPrefix), payload)
	var m map[string]any
	require.NoError(t, wire.Unmarshal([]byte(payload[len(rowsPrefix):]), &m))
	return m
}
