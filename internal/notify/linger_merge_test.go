package notify

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

// TestMergeEventsKeepsWhatEachCarries: held flushes of one queue join into one
// event in id order, but never so that the joined payload loses bodies either
// would carry alone (over MaxBodyBytesPerPayload, or beside rows without bodies)
// or passes MaxRowsPerPayload; other queues stay apart.
func TestMergeEventsKeepsWhatEachCarries(t *testing.T) {
	withBody := func(id int64, size int) Row {
		return Row{ID: id, Msg: &models.Message{Offset: id, Body: bytes.Repeat([]byte("x"), size)}}
	}
	ids := func(evs []Event) [][]int64 {
		var out [][]int64
		for _, ev := range evs {
			var row []int64
			for _, r := range ev.Rows {
				row = append(row, r.ID)
			}
			out = append(out, row)
		}
		return out
	}
	small := mergeEvents(nil, []Event{{Queue: 1, Rows: []Row{withBody(3, 1024)}}, {Queue: 2, Rows: []Row{withBody(9, 10)}}})
	small = mergeEvents(small, []Event{{Queue: 1, Rows: []Row{withBody(1, 1024), withBody(2, 1024)}}})
	require.Equal(t, [][]int64{{1, 2, 3}, {9}}, ids(small), "small bodies join, in id order, per queue")
	require.NotNil(t, carriedBodies(small[0].Rows))

	big := mergeEvents(nil, []Event{{Queue: 1, Rows: []Row{withBody(1, 20<<10)}}})
	big = mergeEvents(big, []Event{{Queue: 1, Rows: []Row{withBody(2, 20<<10)}}})
	require.Equal(t, [][]int64{{1}, {2}}, ids(big), "40 KiB together would carry no body: two events")

	mixed := mergeEvents(nil, []Event{{Queue: 1, Rows: []Row{withBody(1, 10)}}})
	mixed = mergeEvents(mixed, []Event{{Queue: 1, Rows: []Row{{ID: 2}}}, {Queue: 1, Rows: []Row{{ID: 3}}}})
	require.Equal(t, [][]int64{{1}, {2, 3}}, ids(mixed), "rows without bodies join each other, not rows with")

	many := make([]Row, MaxRowsPerPayload)
	for i := range many {
		many[i] = Row{ID: int64(i + 1)}
	}
	capped := mergeEvents(nil, []Event{{Queue: 1, Rows: many}})
	capped = mergeEvents(capped, []Event{{Queue: 1, Rows: []Row{{ID: 5000}}}})
	require.Len(t, capped, 2, "rows past MaxRowsPerPayload start another event")

	whole := mergeEvents(nil, []Event{{Queue: 1}})
	whole = mergeEvents(whole, []Event{{Queue: 1, Rows: []Row{{ID: 7}}}})
	require.Equal(t, []Event{{Queue: 1}}, whole, "read the queue absorbs its rows")
}
